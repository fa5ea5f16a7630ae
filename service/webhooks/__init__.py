"""Webhooks: who may receive them, how they are signed and sent, and the worker that sends them.

- ``callbacks``: which callback URLs a game may name (WEBHOOK_ALLOWED_HOSTS), checked at creation;
- ``signing``: Standard Webhooks signatures (WEBHOOK_SECRET);
- ``entries``: the per-shard Redis keys (outbox, retry, dead, due) and what their entries hold;
- ``sender``, ``addresses``, ``connections``, ``answers``: one delivery attempt, refusing
  private addresses, over a kept-alive connection;
- ``worker``, ``queues``, ``pool``, ``finishing``: the ``ginrummy worker`` process's delivery
  and deadline loops;
- ``process``, ``health``, ``metrics``: running it (signals, probes, Prometheus).

Importing this package imports nothing else: the API imports ``callbacks`` without Redis.
"""
