"""Tests of webhooks: signing, callback URLs, the sender and the ginrummy worker."""
