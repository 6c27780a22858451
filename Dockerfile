# The application image: the worker, the approvals UI, the CLI and the demo model, one per command.
FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# bubblewrap confines approved shell commands (see the README); util-linux unshare is the fallback.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml ./
# Whole packages and the three entry points: a module added to a package is in the image by itself.
COPY worker.py starter.py run_local.py ./
COPY core/ core/
COPY channels/ channels/
COPY config/ config/
COPY storage/ storage/
COPY doors/ doors/
COPY maintenance/ maintenance/
COPY workflows/ workflows/
COPY activities/ activities/
COPY payload_store/ payload_store/
COPY demo_model/ demo_model/
COPY approvals_tools/ approvals_tools/
COPY durable_approvals/ durable_approvals/
COPY ui/ ui/
COPY cli/ cli/
COPY examples/ examples/
RUN pip install .

# The projection, the ledger and the tools' workspace live on a volume, owned by an unprivileged user.
RUN useradd --create-home --uid 10001 app && mkdir -p /data/workspace && chown -R app /data
USER app
ENV APPROVALS_DB=/data/approvals.db \
    WORKSPACE_DIR=/data/workspace
VOLUME ["/data"]

CMD ["python", "worker.py"]
