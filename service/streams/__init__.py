"""The API keys' streams: what the webhooks announce, kept per key for reading as Server-Sent
Events (``GET /v1/stream``)."""
