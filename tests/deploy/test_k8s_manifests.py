"""The Kubernetes manifests as ``kubectl apply -k k8s`` would send them (no cluster needed)."""
from __future__ import annotations

import base64
import copy
import re
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from service.config import Config, ConfigError
from tests.deploy.support import gunicorn_settings, real_secrets, shipped

NAMESPACE = "ginrummy"
# The oldest Kubernetes the manifests are for; they are also checked against the newest
# version whose schemas kubernetes-validate ships (offline, it downloads nothing).
OLDEST_KUBERNETES = "1.32.0"
CONFIG_KEYS = {
    "KEY_PREFIX", "GAME_TTL_SECONDS", "IDEMPOTENCY_TTL_SECONDS", "LOG_LEVEL", "MAX_CONTENT_LENGTH",
    "RATE_LIMIT_PER_MINUTE", "WEBHOOK_ALLOWED_HOSTS", "WEB_CONCURRENCY", "GUNICORN_WORKER_CONNECTIONS",
    "LONG_POLL_MAX_WAITERS", "TRUSTED_PROXY_HOPS", "REQUEST_BODY_TIMEOUT_SECONDS", "RESPONSE_SEND_TIMEOUT_SECONDS",
    "UNSTARTED_GAME_TTL_SECONDS", "GAME_TOMBSTONE_SECONDS", "CREATE_QUOTA_PER_MINUTE", "MAX_EVENTS_PER_GAME",
}
SECRET_ENV = ("REDIS_URL", "API_KEYS", "SERVER_SECRET", "METRICS_TOKEN")
PLACEHOLDER_MARK = "REPLACE-ME"
API = "ginrummy"
WORKER = "ginrummy-worker"
WORKLOADS = [("Deployment", API), ("Deployment", WORKER), ("StatefulSet", "ginrummy-redis")]


def only(manifests: list[dict], kind: str, name: str | None = None) -> dict:
    """The one resource of ``kind`` (and ``name``); fails when there is not exactly one."""
    found = [
        resource for resource in manifests
        if resource["kind"] == kind and name in (None, resource["metadata"]["name"])
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def api_container(manifests: list[dict]) -> dict:
    return only(manifests, "Deployment", API)["spec"]["template"]["spec"]["containers"][0]


def secret_values(secret: dict) -> dict[str, str]:
    decoded = {key: base64.b64decode(value).decode() for key, value in secret.get("data", {}).items()}
    return {**decoded, **secret.get("stringData", {})}


def selects(selector: dict, labels: dict) -> bool:
    return selector.items() <= labels.items()


def test_builds_every_resource_of_the_install(manifests) -> None:
    kinds = sorted(resource["kind"] for resource in manifests)
    assert kinds == sorted([
        "Namespace", "ConfigMap", "Secret", "Deployment", "Deployment", "Service", "HorizontalPodAutoscaler",
        "PodDisruptionBudget", "StatefulSet", "Service", "NetworkPolicy",
    ])


@pytest.mark.parametrize("version", [OLDEST_KUBERNETES, kubernetes_validate.latest_version()])
def test_every_resource_validates_against_the_kubernetes_schema(manifests, version: str) -> None:
    failures = []
    for resource in manifests:
        try:
            kubernetes_validate.validate(resource, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            failures.append(f"{resource['kind']}/{resource['metadata']['name']}: {error.message}")
    assert failures == []


def test_strict_validation_refuses_a_misspelt_field(manifests) -> None:
    """Guards the test above: an unknown field is an error, not silently accepted."""
    deployment = copy.deepcopy(only(manifests, "Deployment", API))
    context = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    context["readOnlyRootFilesytem"] = context.pop("readOnlyRootFilesystem")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, OLDEST_KUBERNETES, strict=True)


def test_everything_is_in_the_ginrummy_namespace(manifests) -> None:
    assert only(manifests, "Namespace")["metadata"]["name"] == NAMESPACE
    assert {
        resource["metadata"].get("namespace") for resource in manifests if resource["kind"] != "Namespace"
    } == {NAMESPACE}


def test_namespace_enforces_the_restricted_pod_security_standard(manifests) -> None:
    labels = only(manifests, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_api_runs_at_least_two_replicas(manifests) -> None:
    assert only(manifests, "Deployment", API)["spec"]["replicas"] >= 2
    assert only(manifests, "HorizontalPodAutoscaler")["spec"]["minReplicas"] >= 2


def test_probes_ask_readyz_and_healthz_on_the_image_port(manifests) -> None:
    container = api_container(manifests)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert list(ports.values()) == [int(port) for ports in shipped("EXPOSE") for port in ports.split()]
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        request = container[probe]["httpGet"]
        assert request["path"] == path
        assert request["port"] in ports
    # Liveness must not depend on Redis: a Redis outage would otherwise restart every pod.
    assert container["livenessProbe"]["httpGet"]["path"] != "/readyz"


@pytest.mark.parametrize(("kind", "name"), WORKLOADS)
def test_workload_runs_locked_down(manifests, kind: str, name: str) -> None:
    pod = only(manifests, kind, name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context.get("privileged", False) is False


@pytest.mark.parametrize(("kind", "name"), WORKLOADS)
def test_workload_requests_and_limits_cpu_and_memory(manifests, kind: str, name: str) -> None:
    for container in only(manifests, kind, name)["spec"]["template"]["spec"]["containers"]:
        for bound in ("requests", "limits"):
            assert set(container["resources"][bound]) >= {"cpu", "memory"}, (container["name"], bound)


def test_api_runs_as_the_image_user(manifests) -> None:
    uid, _, gid = shipped("USER")[-1].partition(":")
    context = only(manifests, "Deployment", API)["spec"]["template"]["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"]) == (int(uid), int(gid))


def test_tmp_is_the_only_writable_place_of_the_api(manifests) -> None:
    pod = only(manifests, "Deployment", API)["spec"]["template"]["spec"]
    mounts = {mount["mountPath"]: mount["name"] for mount in pod["containers"][0]["volumeMounts"]}
    assert list(mounts) == ["/tmp"]
    volume = next(volume for volume in pod["volumes"] if volume["name"] == mounts["/tmp"])
    assert "emptyDir" in volume


def config_environment(manifests: list[dict]) -> dict[str, str]:
    """The environment a pod of the Deployment gets from its ConfigMap and Secret."""
    return container_environment(manifests, api_container(manifests))


def container_environment(manifests: list[dict], container: dict) -> dict[str, str]:
    """The environment ``container`` gets from the ConfigMaps and Secrets it names."""
    environment: dict[str, str] = {}
    for source in container["envFrom"]:
        environment |= only(manifests, "ConfigMap", source["configMapRef"]["name"])["data"]
    for variable in container["env"]:
        reference = variable["valueFrom"]["secretKeyRef"]
        secret = only(manifests, "Secret", reference["name"])
        environment[variable["name"]] = secret_values(secret)[reference["key"]]
    return environment


def test_config_map_carries_every_setting_and_the_service_accepts_them(manifests) -> None:
    environment = config_environment(manifests)
    assert CONFIG_KEYS <= set(environment)
    with pytest.raises(ConfigError, match="placeholder"):
        Config.from_env(environment)  # a deployment that kept the shipped secrets fails loudly
    environment = real_secrets(environment)
    Config.from_env(environment)  # raises ConfigError naming a value it cannot use
    settings = gunicorn_settings(environment)
    assert settings["workers"] == environment["WEB_CONCURRENCY"]
    assert settings["worker_connections"] == environment["GUNICORN_WORKER_CONNECTIONS"]
    assert f"LONG_POLL_MAX_WAITERS={environment['LONG_POLL_MAX_WAITERS']}" in settings["raw_env"]


def test_one_worker_per_cpu_of_the_limit(manifests) -> None:
    environment = config_environment(manifests)
    limit = api_container(manifests)["resources"]["limits"]["cpu"]
    cpus = int(limit[:-1]) / 1000 if limit.endswith("m") else float(limit)
    assert int(environment["WEB_CONCURRENCY"]) == max(1, round(cpus))


def test_shutdown_fits_in_the_termination_grace_period(manifests) -> None:
    environment = real_secrets(config_environment(manifests))
    graceful_timeout = int(gunicorn_settings(environment)["graceful_timeout"])
    pod = only(manifests, "Deployment", API)["spec"]["template"]["spec"]
    pre_stop = pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    drain_seconds = int(pre_stop[1])
    assert drain_seconds > 0
    # The grace period counts from the start of preStop; the kubelet kills the pod after it.
    assert pod["terminationGracePeriodSeconds"] > drain_seconds + graceful_timeout
    # A shutdown lets the longest long-poll finish.
    assert graceful_timeout >= Config.from_env(environment).long_poll_max_seconds


def test_redis_url_and_api_keys_come_from_the_secret(manifests) -> None:
    container = api_container(manifests)
    references = {variable["name"]: variable["valueFrom"]["secretKeyRef"] for variable in container["env"]}
    for name in SECRET_ENV:
        secret = only(manifests, "Secret", references[name]["name"])
        assert references[name]["key"] in secret_values(secret)
    config_maps = [
        only(manifests, "ConfigMap", source["configMapRef"]["name"]) for source in container["envFrom"]
    ]
    configured = set().union(*(config_map["data"] for config_map in config_maps))
    assert configured.isdisjoint(SECRET_ENV), "secrets must not sit in the ConfigMap"


def test_shipped_secret_holds_only_marked_placeholders(manifests) -> None:
    values = secret_values(only(manifests, "Secret"))
    assert values and all(PLACEHOLDER_MARK in value for value in values.values()), values


def test_redis_url_reaches_the_bundled_redis_with_its_password(manifests) -> None:
    values = secret_values(only(manifests, "Secret"))
    url = urlsplit(values["REDIS_URL"])
    service = only(manifests, "Service", url.hostname)
    assert service["spec"]["clusterIP"] == "None"
    assert url.port in [port["port"] for port in service["spec"]["ports"]]
    statefulset = only(manifests, "StatefulSet")
    password = next(
        variable["valueFrom"]["secretKeyRef"]
        for variable in statefulset["spec"]["template"]["spec"]["containers"][0]["env"]
        if variable["name"] == "REDIS_PASSWORD"
    )
    assert url.password == values[password["key"]]


def test_api_service_routes_to_the_api_pods(manifests) -> None:
    service = only(manifests, "Service", "ginrummy")
    pod_labels = only(manifests, "Deployment", API)["spec"]["template"]["metadata"]["labels"]
    assert selects(service["spec"]["selector"], pod_labels)
    port_names = {port["name"] for port in api_container(manifests)["ports"]}
    assert {port["targetPort"] for port in service["spec"]["ports"]} <= port_names


def test_autoscaler_scales_the_deployment_on_cpu(manifests) -> None:
    autoscaler = only(manifests, "HorizontalPodAutoscaler")
    assert autoscaler["apiVersion"] == "autoscaling/v2"
    target = autoscaler["spec"]["scaleTargetRef"]
    deployment = only(manifests, "Deployment", API)
    assert (target["kind"], target["name"]) == (deployment["kind"], deployment["metadata"]["name"])
    assert autoscaler["spec"]["maxReplicas"] > autoscaler["spec"]["minReplicas"]
    assert [metric["resource"]["name"] for metric in autoscaler["spec"]["metrics"]] == ["cpu"]


def test_disruption_budget_keeps_api_pods_up_during_drains(manifests) -> None:
    budget = only(manifests, "PodDisruptionBudget")
    assert budget["apiVersion"] == "policy/v1"
    pod_labels = only(manifests, "Deployment", API)["spec"]["template"]["metadata"]["labels"]
    assert selects(budget["spec"]["selector"]["matchLabels"], pod_labels)
    assert budget["spec"].get("maxUnavailable") == 1


def test_redis_is_a_pinned_redis_7_with_a_volume_and_probes(manifests) -> None:
    statefulset = only(manifests, "StatefulSet")
    pod = statefulset["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert re.fullmatch(r"redis:7\.\d+\.\d+", container["image"]), container["image"]
    headless = only(manifests, "Service", statefulset["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert selects(headless["spec"]["selector"], statefulset["spec"]["template"]["metadata"]["labels"])
    claims = [claim["metadata"]["name"] for claim in statefulset["spec"]["volumeClaimTemplates"]]
    assert {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]} == {claims[0]: "/data"}
    assert {"readinessProbe", "livenessProbe"} <= set(container)


def test_only_the_services_pods_may_reach_redis(manifests) -> None:
    policy = only(manifests, "NetworkPolicy")
    redis_labels = only(manifests, "StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert selects(policy["spec"]["podSelector"]["matchLabels"], redis_labels)
    [rule] = policy["spec"]["ingress"]
    peers = [peer["podSelector"]["matchLabels"] for peer in rule["from"]]
    for name in (API, WORKER):
        labels = only(manifests, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        assert any(selects(peer, labels) for peer in peers), name
    assert not any(selects(peer, redis_labels) for peer in peers)
