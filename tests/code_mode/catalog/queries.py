"""Plain-language queries for ``search_tools`` over the generated catalog of
``tests/fakes/big_server.py``, each with the tool it is meant to find; shared by the catalog
tests and ``benchmarks/bench_catalog.py``."""

from __future__ import annotations

QUERIES = {
    "delete a kv namespace": "kv_namespace_delete",
    "run a SQL query on a D1 database": "d1_database_query",
    "upload an image": "image_upload",
    "purge the cache of a zone": "zone_purge_cache",
    "create a DNS record": "dns_record_create",
    "list R2 buckets in the EU": "r2_bucket_list_eu",
    "rollback a worker script": "worker_script_rollback",
    "send a message to a queue": "queue_send_message",
    "renew an SSL certificate": "ssl_certificate_renew",
    "rotate the turnstile secret": "turnstile_widget_rotate_secret",
    "invite a member again": "account_member_resend_invite",
    "query a vector index": "vectorize_index_query",
    "tail worker logs": "worker_script_tail_logs",
    "health of a load balancer pool": "lb_pool_health",
    "presigned URL for an R2 object": "r2_object_presign_url",
}
