"""Tests of the HTTP layer, through Flask's test client on the real Redis."""
