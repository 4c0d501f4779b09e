"""OrbitMQ: a message queue in Python that follows Apache RocketMQ's design and wire protocols.

The subpackages and the direction their imports may point are described in the README and
enforced by the import-linter contracts in pyproject.toml.
"""

__version__ = "0.1.0"
