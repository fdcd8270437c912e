"""The scheduling examples of docker/ (issue #13) as written: the Kubernetes manifests validate
against the API's schemas in strict mode (kubernetes-validate, which bundles them: no network)
and say what the issue asks of them; compose.yaml parses and has the volume, read-only root
and a stop grace longer than ours; the configs they carry are valid sitemap-crawler configs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from crawler.config import Config, build, coerce, default_of, fields, from_env, load_toml
from crawler.core.fleet import parse_sites, pick
from crawler.shell.engine import STOP_GRACE_SECONDS
from tests.procs import missing

DOCKER = Path(__file__).resolve().parents[1] / "docker"
K8S = DOCKER / "k8s"
#: the Kubernetes release the manifests are checked against (CronJob timeZone: 1.27,
#: Job backoffLimitPerIndex: 1.29)
K8S_VERSION = "1.31"
#: SIGTERM lets requests in flight run this long, then the state is saved
OUR_GRACE = STOP_GRACE_SECONDS + next(default_of(f) for f in fields() if f.name == "timeout")


def _docs(name: str) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), f"{name}: one resource of each kind"
    return by_kind


def _pod(workload: dict[str, Any]) -> dict[str, Any]:
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def _mounts(pod: dict[str, Any]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """mountPath -> (the mount, its volume)."""
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    return {m["mountPath"]: (m, volumes[m["name"]]) for m in container["volumeMounts"]}


def _kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        missing("kubernetes-validate (pip install -e '.[dev]')")
    return kubernetes_validate


def _memory_mib(text: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", text).groups()
    return int(number) * (1024 if unit == "Gi" else 1)


@pytest.mark.parametrize("name", ["cronjob.yaml", "fleet.yaml"])
def test_the_manifests_validate_strictly_against_the_kubernetes_schemas(name):
    kv = _kubernetes_validate()
    for doc in _docs(name).values():
        kv.validate(doc, K8S_VERSION, strict=True)  # raises naming what is wrong


def test_strict_validation_catches_a_misspelt_key():
    kv = _kubernetes_validate()
    cron = _docs("cronjob.yaml")["CronJob"]
    _pod(cron)["containers"][0]["securtyContext"] = {"readOnlyRootFilesystem": True}
    with pytest.raises(kv.ValidationError, match="securtyContext"):
        kv.validate(cron, K8S_VERSION, strict=True)


@pytest.mark.parametrize("name", ["cronjob.yaml", "fleet.yaml"])
def test_the_pods_run_as_non_root_on_a_read_only_root_with_data_config_and_tmp(name):
    docs = _docs(name)
    workload = docs.get("CronJob") or docs["Job"]
    pod = _pod(workload)
    (container,) = pod["containers"]
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["terminationGracePeriodSeconds"] > OUR_GRACE
    assert container["args"][0] == "job"

    mounts = _mounts(pod)
    data, volume = mounts["/data"]
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert claim == docs["PersistentVolumeClaim"]["metadata"]["name"]
    config, volume = mounts["/config"]
    assert config["readOnly"] is True
    assert volume["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    assert "sitemap-crawler.toml" in docs["ConfigMap"]["data"]
    assert "emptyDir" in mounts["/tmp"][1]
    assert not data.get("readOnly")

    limits, requests = container["resources"]["limits"], container["resources"]["requests"]
    # bench/README.md: 110-190 MB for 20k-50k pages; the limit leaves room above that
    assert 190 < _memory_mib(requests["memory"]) <= _memory_mib(limits["memory"])
    assert requests["cpu"] and limits["cpu"]


def test_the_cronjob_runs_one_site_nightly_never_two_at_once():
    cron = _docs("cronjob.yaml")["CronJob"]
    spec = cron["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["startingDeadlineSeconds"] > 0
    assert len(spec["schedule"].split()) == 5
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] > 0
    assert _docs("cronjob.yaml")["PersistentVolumeClaim"]["spec"]["accessModes"]


def test_the_fleet_is_an_indexed_job_of_one_completion_a_site():
    docs = _docs("fleet.yaml")
    job, config = docs["Job"], docs["ConfigMap"]
    sites = parse_sites(config["data"]["sites.txt"])
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == len(sites)
    assert 1 <= job["spec"]["parallelism"] < len(sites)
    (container,) = _pod(job)["containers"]
    assert container["args"] == ["job", "--sites", "/config/sites.txt"]
    # every index names a site, each with a folder of its own
    folders = {pick(sites, index, "sites.txt")[1] for index in range(len(sites))}
    assert len(folders) == len(sites)
    assert "ReadWriteMany" in docs["PersistentVolumeClaim"]["spec"]["accessModes"]


def _valid_config(text: str, url: str | None = None) -> Config:
    raw = tomllib.loads(text)
    assert not {"output", "state", "report", "decisions", "resume"} & raw.keys(), "the job's"
    values = {key: coerce(key, value) for key, value in raw.items()}
    if url is not None:
        values["url"] = url
    return build(values, {})


def test_the_configs_they_carry_are_valid_sitemap_crawler_configs():
    cron = _docs("cronjob.yaml")
    _valid_config(cron["ConfigMap"]["data"]["sitemap-crawler.toml"])
    (container,) = _pod(cron["CronJob"])["containers"]
    assert from_env({e["name"]: e["value"] for e in container["env"] if "value" in e})
    for secret in (e for e in container["env"] if "valueFrom" in e):  # a key, from a Secret
        assert from_env({secret["name"]: "https://hooks.example.com/x"})
    fleet = _docs("fleet.yaml")["ConfigMap"]["data"]
    _valid_config(fleet["sitemap-crawler.toml"], url="https://example.com/")
    load_toml(DOCKER / "sitemap-crawler.toml")
    _valid_config((DOCKER / "sitemap-crawler.toml").read_text())


def _seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smh])", text))


def test_compose_runs_the_job_once_with_the_data_volume_read_only_root_and_a_long_grace():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    (service,) = compose["services"].values()
    assert service["build"]["dockerfile"] == "docker/Dockerfile"
    assert service["command"] == ["job"]
    assert service["read_only"] is True
    assert "/tmp" in service["tmpfs"]
    assert service["restart"] == "no"
    assert "user" in service
    assert _seconds(service["stop_grace_period"]) > OUR_GRACE
    volumes = {v.split(":")[1]: v for v in service["volumes"]}
    assert "/data" in volumes
    config = volumes["/config/sitemap-crawler.toml"]
    assert config.endswith(":ro")
    assert (DOCKER / config.split(":")[0]).resolve() == DOCKER / "sitemap-crawler.toml"


def test_the_dockerfile_runs_the_job_as_a_non_root_user_from_a_venv():
    text = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.12-slim$", text, re.M)
    assert len(re.findall(r"^FROM \$\{BASE\}", text, re.M)) == 2  # a build stage, a final one
    assert "python3 -m venv /opt/venv" in text
    assert "COPY --from=build /opt/venv /opt/venv" in text
    assert re.search(r"^USER 10001", text, re.M)
    assert 'VOLUME ["/data"]' in text
    assert "PYTHONDONTWRITEBYTECODE=1" in text
    assert 'ENTRYPOINT ["sitemap-crawler"]' in text and 'CMD ["job"]' in text
    ignored = (DOCKER.parent / ".dockerignore").read_text().split()
    assert "*" in ignored and "!crawler/" in ignored and "!sitemap_out/" in ignored
