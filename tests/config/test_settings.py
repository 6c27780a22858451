"""Settings from the environment: the demo model by default, a real model one variable away."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import DEMO_MODEL_NAME, DEMO_MODEL_URL, OPENAI_URL, ConfigError, Settings


def test_no_model_variables_means_the_demo_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert (settings.openai_base_url, settings.llm_model) == (DEMO_MODEL_URL, DEMO_MODEL_NAME)


def test_an_api_key_alone_means_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("LLM_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = Settings()
    assert settings.openai_base_url == OPENAI_URL and settings.llm_model == "gpt-4o-mini"


def test_a_base_url_and_model_are_taken_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("LLM_MODEL", "qwen2.5")
    settings = Settings()
    assert (settings.openai_base_url, settings.llm_model) == ("http://localhost:11434/v1", "qwen2.5")


@pytest.mark.parametrize("raw", ["soon", "0", "-5"])
def test_a_bad_approval_timeout_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("APPROVAL_TIMEOUT", raw)
    with pytest.raises(ConfigError, match="APPROVAL_TIMEOUT"):
        Settings()


def test_workflow_cache_size_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKFLOW_CACHE_SIZE", "10")
    assert Settings().workflow_cache_size == 10
    monkeypatch.setenv("WORKFLOW_CACHE_SIZE", "lots")
    with pytest.raises(ConfigError, match="WORKFLOW_CACHE_SIZE"):
        Settings()
    monkeypatch.setenv("WORKFLOW_CACHE_SIZE", "-1")
    with pytest.raises(ConfigError, match="WORKFLOW_CACHE_SIZE"):
        Settings()


def test_a_workflow_cache_of_zero_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKFLOW_CACHE_SIZE", "0")
    assert Settings().workflow_cache_size == 0


def test_database_urls_and_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEDGER_DB", raising=False)
    monkeypatch.setenv("APPROVALS_DB", "sqlite:///srv/approvals/p.db")
    settings = Settings()
    assert settings.approvals_db == Path("/srv/approvals/p.db")
    assert settings.ledger_db == Path("/srv/approvals/ledger.db")
    monkeypatch.setenv("APPROVALS_DB", "sqlite:////srv/approvals/p.db")
    assert Settings().approvals_db == Path("/srv/approvals/p.db")
    monkeypatch.setenv("APPROVALS_DB", "sqlite:rel/p.db")
    assert Settings().approvals_db == Path("rel/p.db")
    monkeypatch.setenv("APPROVALS_DB", "postgresql://app@db:5432/approvals")
    assert Settings().approvals_db == Settings().ledger_db == "postgresql://app@db:5432/approvals"


def test_ledger_db_is_read_once_and_a_built_settings_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built = Settings(approvals_db=tmp_path / "approvals.db")
    monkeypatch.setenv("LEDGER_DB", str(tmp_path / "elsewhere.db"))
    assert built.ledger_db == tmp_path / "ledger.db", "a later environment change does not reach a built Settings"
    assert Settings().ledger_db == tmp_path / "elsewhere.db"
