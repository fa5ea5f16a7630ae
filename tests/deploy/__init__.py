"""Tests of the deployment files: Dockerfile, gunicorn settings, Kubernetes manifests."""
