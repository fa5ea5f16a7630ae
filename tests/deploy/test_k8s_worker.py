"""The webhook worker's Deployment (k8s/worker-deployment.yaml), as ``kubectl kustomize`` builds it."""
from __future__ import annotations

import subprocess
import tomllib

import pytest

from service.config import Config, ConfigError
from service.webhooks.sender import TOTAL_TIMEOUT_SECONDS
from service.webhooks.worker import WorkerSettings
from tests.deploy.support import REPO, real_secrets, tool
from tests.deploy.test_k8s_manifests import API, WORKER, container_environment, only, selects
from tests.webhooks.support import new_secret

SECRET_ENV = ("REDIS_URL", "WEBHOOK_SECRET", "SERVER_SECRET", "METRICS_TOKEN")


def pod(manifests: list[dict], name: str) -> dict:
    return only(manifests, "Deployment", name)["spec"]["template"]["spec"]


def worker_container(manifests: list[dict]) -> dict:
    return pod(manifests, WORKER)["containers"][0]


def worker_environment(manifests: list[dict]) -> dict[str, str]:
    """The environment a worker pod gets from its ConfigMap and Secret."""
    return container_environment(manifests, worker_container(manifests))


def real_worker_environment(manifests: list[dict]) -> dict[str, str]:
    return real_secrets(worker_environment(manifests))


def test_worker_runs_the_worker_command_of_the_api_image(manifests) -> None:
    container = worker_container(manifests)
    assert container["image"] == pod(manifests, API)["containers"][0]["image"]
    assert container["command"] == ["ginrummy", "worker"]  # exec form: the worker is PID 1
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ginrummy"] == "service.cli:main"
    result = subprocess.run([tool("ginrummy"), "worker", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--host" in result.stdout


def test_worker_probes_ask_its_own_port(manifests) -> None:
    container = worker_container(manifests)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    config = Config.from_env({**real_worker_environment(manifests), "WEBHOOK_SECRET": new_secret()})
    for probe, path in (("startupProbe", "/healthz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        request = container[probe]["httpGet"]
        assert request["path"] == path
        assert ports[request["port"]] == config.worker_port


def test_worker_gets_the_services_settings_and_its_secrets_from_the_secret(manifests) -> None:
    container = worker_container(manifests)
    assert container["envFrom"] == pod(manifests, API)["containers"][0]["envFrom"]
    references = {variable["name"]: variable["valueFrom"]["secretKeyRef"] for variable in container["env"]}
    assert set(references) == set(SECRET_ENV)
    config_maps = [only(manifests, "ConfigMap", source["configMapRef"]["name"]) for source in container["envFrom"]]
    assert set().union(*(config_map["data"] for config_map in config_maps)).isdisjoint(SECRET_ENV)


def test_worker_refuses_the_placeholder_secret_and_accepts_a_real_one(manifests) -> None:
    environment = worker_environment(manifests)
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET"):
        Config.from_env(environment)  # a deployment that forgot to replace it fails loudly
    config = Config.from_env({**real_secrets(environment), "WEBHOOK_SECRET": new_secret()})
    assert config.webhook_allow_private is False
    assert config.redis_url.startswith("redis://")


def test_worker_shutdown_fits_in_the_termination_grace_period(manifests) -> None:
    config = Config.from_env({**real_worker_environment(manifests), "WEBHOOK_SECRET": new_secret()})
    # A delivery in flight (at most TOTAL_TIMEOUT_SECONDS) can finish ...
    assert config.worker_graceful_seconds >= TOTAL_TIMEOUT_SECONDS
    # ... and the kubelet waits for the reader blocked in Redis too before it kills the pod.
    grace = pod(manifests, WORKER)["terminationGracePeriodSeconds"]
    assert grace > config.worker_graceful_seconds + WorkerSettings().block_seconds


def test_worker_is_locked_down_like_the_api(manifests) -> None:
    worker, api = pod(manifests, WORKER), pod(manifests, API)
    assert worker["securityContext"] == api["securityContext"]
    assert worker_container(manifests)["securityContext"] == api["containers"][0]["securityContext"]
    assert worker["automountServiceAccountToken"] is False and worker["enableServiceLinks"] is False


def test_worker_runs_two_replicas_and_no_api_resource_reaches_its_pods(manifests) -> None:
    deployment = only(manifests, "Deployment", WORKER)
    assert deployment["spec"]["replicas"] >= 2
    worker_labels = deployment["spec"]["template"]["metadata"]["labels"]
    api_labels = only(manifests, "Deployment", API)["spec"]["template"]["metadata"]["labels"]
    assert selects(deployment["spec"]["selector"]["matchLabels"], worker_labels)
    assert not selects(deployment["spec"]["selector"]["matchLabels"], api_labels)
    assert not selects(only(manifests, "Deployment", API)["spec"]["selector"]["matchLabels"], worker_labels)
    for resource in manifests:
        if resource["kind"] == "Service" and "selector" in resource["spec"]:
            assert not selects(resource["spec"]["selector"], worker_labels), resource["metadata"]["name"]
    assert not selects(only(manifests, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"], worker_labels)
