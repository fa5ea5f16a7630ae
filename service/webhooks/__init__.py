"""Webhooks: how they are sent, and the worker that sends them.

Which callback URLs a game may name (``service.callback_urls``) and how a delivery is signed
(``service.webhook_signing``) sit below, where the settings can check them at start-up.

- ``entries``: the per-shard Redis keys (feed, outbox of older versions, retry, dead) and
  what their entries hold;
- ``sender``, ``addresses``, ``connections``, ``answers``: one delivery attempt, refusing
  private addresses, over a kept-alive connection;
- ``worker``, ``queues``, ``pool``, ``finishing``: the ``ginrummy worker`` process's delivery
  loops;
- ``process``, ``health``, ``metrics``: running it (signals, probes, Prometheus).
"""
