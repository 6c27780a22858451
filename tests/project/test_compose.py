"""docker-compose.yml and the Dockerfile agree with the code, checked without a container engine."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from cli.parser import build_parser
from config.temporal_server import DYNAMIC_CONFIG
from payload_store.s3 import S3_ENVIRONMENT, S3Location
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
APP_SERVICES = [name for name, service in SERVICES.items() if "build" in service]
OFFICIAL_IMAGES = (
    "postgres",
    "temporalio/auto-setup",
    "temporalio/server",
    "temporalio/ui",
    "temporalio/admin-tools",
    "minio/minio",
    "minio/mc",
    "prom/prometheus",
    "grafana/grafana",
)
SETTINGS_SOURCE = (ROOT / "config" / "settings.py").read_text()
SETTINGS_VARIABLES = set(re.findall(r'"([A-Z][A-Z0-9_]{2,})"', SETTINGS_SOURCE)) | set(S3_ENVIRONMENT)


def resolved(value: object) -> str:
    """${NAME:-default} as compose resolves it with NAME unset."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))


def environment(name: str) -> dict[str, str]:
    return {key: resolved(value) for key, value in (SERVICES[name].get("environment") or {}).items()}


def test_every_service_uses_an_official_image_or_the_app_image() -> None:
    for name, service in SERVICES.items():
        if "build" in service:
            assert service["build"] == "." and (ROOT / "Dockerfile").exists(), name
        else:
            image = service["image"]
            assert image.split(":")[0] in OFFICIAL_IMAGES and ":" in image, f"{name}: pin a version of {image}"
    assert {"worker", "approvals-ui", "demo-model"} <= set(APP_SERVICES)


def test_app_commands_point_at_code_that_exists() -> None:
    for name in APP_SERVICES:
        command = SERVICES[name]["command"]
        assert command[0] == "python", name
        if command[1] == "-m":
            assert (ROOT / command[2] / "__main__.py").exists(), name
        else:
            assert (ROOT / command[1]).is_file(), name
        if command[1] == "starter.py":
            assert build_parser().parse_args(command[2:]).command == command[2], name
    assert SERVICES["worker"]["command"] == ["python", "worker.py"]
    assert SERVICES["approvals-ui"]["command"] == ["python", "starter.py", "ui"]


@pytest.mark.parametrize("name", ["worker", "approvals-ui"])
def test_app_environment_uses_only_the_settings_variables_and_their_values_fit(name: str) -> None:
    env = environment(name)
    assert set(env) <= SETTINGS_VARIABLES, (
        f"{name} sets variables config/settings.py never reads: {set(env) - SETTINGS_VARIABLES}"
    )
    assert f'"TASK_QUEUE", "{env["TASK_QUEUE"]}"' in SETTINGS_SOURCE, "the code's default task queue"
    host, port = env["TEMPORAL_ADDRESS"].split(":")
    assert host in SERVICES and SERVICES[host]["image"].startswith("temporalio/") and port == "7233"
    assert any(p.endswith(":7233") for p in SERVICES[host]["ports"])
    if name == "worker":  # the tools' workspace is on the replica's own volume
        mounts = [volume.split(":")[-1] for volume in SERVICES[name]["volumes"]]
        assert any(env["WORKSPACE_DIR"].startswith(target) for target in mounts)
    base_url = env["OPENAI_BASE_URL"]
    assert re.fullmatch(r"http://demo-model:8100/v1", base_url)
    assert SERVICES["demo-model"]["command"][-1] == "8100"
    float(env["APPROVAL_TIMEOUT"])


def test_worker_and_ui_share_one_projection_on_postgresql_and_no_volume() -> None:
    """Replicas on any host: the projection and the ledger are a database on the postgres service."""
    worker, ui = environment("worker"), environment("approvals-ui")
    assert worker["APPROVALS_DB"] == ui["APPROVALS_DB"] and "LEDGER_DB" not in worker  # the ledger goes beside it
    url = urlsplit(worker["APPROVALS_DB"])
    assert (url.scheme, url.hostname, url.port, url.path) == ("postgresql", "postgresql", 5432, "/approvals")
    postgres = environment("postgresql")
    assert (url.username, url.password) == (postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"])
    setup = SERVICES["approvals-db"]
    assert setup["image"].split(":")[0] == "postgres" and 'CREATE DATABASE approvals"' in " ".join(setup["command"])
    assert setup["depends_on"]["postgresql"]["condition"] == "service_healthy"
    for name in ("worker", "approvals-ui"):
        assert SERVICES[name]["depends_on"]["approvals-db"]["condition"] == "service_completed_successfully"
    assert "volumes" not in SERVICES["approvals-ui"]
    assert all(":" not in volume for volume in SERVICES["worker"]["volumes"]), "no volume shared by replicas"


def test_ui_listens_where_it_is_published() -> None:
    env = environment("approvals-ui")
    assert env["UI_HOST"] == "0.0.0.0"
    assert any(mapping.endswith(f":{env['UI_PORT']}") for mapping in SERVICES["approvals-ui"]["ports"])
    assert "UI_TOKEN" in env


def test_search_attributes_are_registered_as_the_workflow_sets_them() -> None:
    setup = SERVICES["temporal-setup"]
    assert setup["image"].startswith("temporalio/admin-tools:")
    script = " ".join(setup["command"])
    words = shlex.split(script.replace(";", " ; "))
    created = {
        words[i + 1]: words[i + 3] for i, word in enumerate(words) if word == "--name" and words[i + 2] == "--type"
    }
    assert "search-attribute create" in script
    assert created == {TURN_STATUS_KEY.name: "Keyword", PENDING_APPROVALS_KEY.name: "Int"}
    assert "temporal:7233" in setup["environment"]["TEMPORAL_ADDRESS"]


def test_dependencies_exist_and_the_app_waits_for_the_search_attributes() -> None:
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on") or []:
            assert dependency in SERVICES, f"{name} depends on unknown {dependency}"
    for name in ("worker", "approvals-ui"):
        assert SERVICES[name]["depends_on"]["temporal-setup"]["condition"] == "service_completed_successfully"
    assert SERVICES["temporal"]["depends_on"]["postgresql"]["condition"] == "service_healthy"
    assert "healthcheck" in SERVICES["postgresql"]
    assert environment("temporal")["POSTGRES_SEEDS"] == "postgresql"
    assert environment("temporal-ui")["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_named_volumes_are_declared() -> None:
    declared = set(COMPOSE["volumes"])
    for name, service in SERVICES.items():
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            assert source.startswith((".", "/")) or source in declared, f"{name}: undeclared volume {source}"


def test_dockerfile_copies_every_package_and_module_the_app_needs() -> None:
    """Every package setuptools finds (pyproject's packages.find) is copied whole; the file-set
    test (test_image_files.py) then imports every entry point from what was copied."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = pyproject["packages"]["find"]["include"]
    packages = [p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and f"{p.name}*" in patterns]
    assert len(packages) >= 10, packages
    for package in packages:
        assert f"COPY {package}/ {package}/" in dockerfile, package
    for module in pyproject["py-modules"]:
        assert re.search(rf"^COPY .*\b{module}\.py\b", dockerfile, re.M), module
    python = re.search(r"^FROM python:(\d+)\.(\d+)", dockerfile, re.M)
    assert python is not None and (int(python[1]), int(python[2])) >= (3, 11)
    assert re.search(r"^USER \w+", dockerfile, re.M), "the app runs unprivileged"


def test_worker_and_ui_store_payloads_in_the_minio_bucket_that_setup_creates() -> None:
    worker, ui = environment("worker"), environment("approvals-ui")
    keys = ("PAYLOAD_STORE", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    assert {k: worker[k] for k in keys} == {k: ui[k] for k in keys}
    location = S3Location.parse(worker["PAYLOAD_STORE"])
    host, port = worker["AWS_ENDPOINT_URL"].removeprefix("http://").split(":")
    minio, setup = environment(host), environment("minio-setup")
    assert SERVICES[host]["image"].startswith("minio/minio:") and port == "9000"
    assert (worker["AWS_ACCESS_KEY_ID"], worker["AWS_SECRET_ACCESS_KEY"]) == (
        minio["MINIO_ROOT_USER"],
        minio["MINIO_ROOT_PASSWORD"],
    )
    assert (setup["MINIO_ROOT_USER"], setup["MINIO_ROOT_PASSWORD"]) == (
        minio["MINIO_ROOT_USER"],
        minio["MINIO_ROOT_PASSWORD"],
    )
    script = " ".join(SERVICES["minio-setup"]["command"])
    assert f"http://{host}:{port}" in script and f"mb --ignore-existing store/{location.bucket}" in script
    assert SERVICES["minio-setup"]["depends_on"][host]["condition"] == "service_healthy"
    assert "healthcheck" in SERVICES[host]
    for name in ("worker", "approvals-ui"):
        assert SERVICES[name]["depends_on"]["minio-setup"]["condition"] == "service_completed_successfully"


def test_the_worker_can_start_the_tool_sandbox() -> None:
    """bubblewrap in the image, and the user namespaces it needs allowed for the worker only."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", dockerfile), "the image has bubblewrap"
    assert set(SERVICES["worker"].get("security_opt", [])) == {"seccomp=unconfined", "apparmor=unconfined"}
    assert "security_opt" not in SERVICES["approvals-ui"], "the UI starts no sandbox and keeps Docker's profiles"


def _metric_names() -> set[str]:
    """Every metric the code exposes, with the suffixes Prometheus gives counters and histograms."""
    sources = (ROOT / "ui" / "metrics_routes.py").read_text() + (ROOT / "activities" / "worker_metrics.py").read_text()
    names = set(re.findall(r'"(approvals_[a-z_]+)"', sources))
    return names | {f"{name}_{suffix}" for name in names for suffix in ("total", "bucket", "sum", "count")}


def test_prometheus_scrapes_the_ui_and_every_worker_where_they_serve_metrics() -> None:
    prometheus = SERVICES["prometheus"]
    [mount] = prometheus["volumes"]
    source, target = mount.split(":")[:2]
    assert target == "/etc/prometheus/prometheus.yml"
    config = yaml.safe_load((ROOT / source).read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    ui_port = environment("approvals-ui")["UI_PORT"]
    assert jobs["approvals-ui"]["static_configs"][0]["targets"] == [f"approvals-ui:{ui_port}"]
    assert jobs["approvals-ui"]["metrics_path"] == "/metrics"
    [workers] = jobs["approvals-worker"]["dns_sd_configs"]
    assert workers["names"] == ["worker"] and str(workers["port"]) == environment("worker")["WORKER_METRICS_PORT"]


def test_grafana_is_provisioned_with_the_dashboard_over_our_metrics() -> None:
    grafana = SERVICES["grafana"]
    mounts = dict(volume.split(":")[:2] for volume in grafana["volumes"])
    provisioning = ROOT / next(source for source, target in mounts.items() if target == "/etc/grafana/provisioning")
    [datasource] = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert datasource["url"] == "http://prometheus:9090" and "prometheus" in SERVICES
    [provider] = yaml.safe_load((provisioning / "dashboards" / "approvals.yml").read_text())["providers"]
    dashboards = ROOT / next(source for source, target in mounts.items() if target == provider["options"]["path"])
    [dashboard_file] = dashboards.glob("*.json")
    dashboard = json.loads(dashboard_file.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in expressions for name in re.findall(r"\b(approvals_[a-z_]+)", expr)}
    assert used and used <= _metric_names(), f"the dashboard asks for metrics nobody exposes: {used - _metric_names()}"
    assert {"approvals_waiting", "approvals_decisions_total", "approvals_time_to_decision_seconds_bucket"} <= used
    assert all(panel["datasource"]["uid"] == datasource["uid"] for panel in dashboard["panels"])


def test_the_compose_server_reads_its_queues_as_often_as_the_dev_server() -> None:
    """The server compose starts gets the queue-reader rates `make run`'s dev server gets, from the
    file it mounts, so a request's decision reaches its caller as soon under compose."""
    temporal = SERVICES["temporal"]
    mounts = dict(volume.rsplit(":", 2)[:2] for volume in temporal["volumes"])
    inside = "/etc/temporal/" + environment("temporal")["DYNAMIC_CONFIG_FILE_PATH"]
    [source] = [host for host, target in mounts.items() if target == inside]
    mounted = yaml.safe_load((ROOT / source).read_text())
    assert {key: [entry["value"] for entry in entries] for key, entries in mounted.items()} == {
        key: [value] for key, value in DYNAMIC_CONFIG.items()
    }
