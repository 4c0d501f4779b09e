"""Headers of the plain ACL admin requests (RocketMQ 4.9's AdminBrokerProcessor, mqadmin's
updateAclConfig, deleteAclConfig, clusterAclConfigVersion and updateGlobalWhiteAddr)."""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, ext_field


class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG (50): add an account or change the fields given.
    ``topic_perms`` and ``group_perms`` are comma-separated ``name=PERM`` items."""

    access_key: str = ext_field("accessKey")
    secret_key: str | None = ext_field("secretKey", default=None)
    white_remote_address: str | None = ext_field("whiteRemoteAddress", default=None)
    admin: bool = ext_field("admin", default=False)
    default_topic_perm: str | None = ext_field("defaultTopicPerm", default=None)
    default_group_perm: str | None = ext_field("defaultGroupPerm", default=None)
    topic_perms: str | None = ext_field("topicPerms", default=None)
    group_perms: str | None = ext_field("groupPerms", default=None)


class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG (51): remove an account from the file that holds it."""

    access_key: str = ext_field("accessKey")


class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): replace globalWhiteRemoteAddresses (comma-
    separated) in ``acl_file_full_path`` (empty: the default plain_acl.yml)."""

    global_white_addrs: str = ext_field("globalWhiteAddrs")
    acl_file_full_path: str | None = ext_field("aclFileFullPath", default=None)


class GetBrokerAclConfigResponseHeader(CommandHeader):
    """GET_BROKER_CLUSTER_ACL_INFO (52)'s answer: the default file's data version (JSON),
    every file's version (JSON object keyed by path) and who answers."""

    version: str = ext_field("version")
    all_acl_file_version: str | None = ext_field("allAclFileVersion", default=None)
    broker_name: str = ext_field("brokerName")
    broker_addr: str = ext_field("brokerAddr")
    cluster_name: str = ext_field("clusterName")
