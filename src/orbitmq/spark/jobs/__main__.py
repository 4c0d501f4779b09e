"""``python -m orbitmq.spark.jobs ...`` and ``spark-submit <this file> ...``: the pipeline
commands without the rest of the CLI."""

from orbitmq.spark.jobs.commands import pipeline

if __name__ == "__main__":
    pipeline()
