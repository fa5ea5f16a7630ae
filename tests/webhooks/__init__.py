"""Tests of webhooks: the sender and the ginrummy worker."""
