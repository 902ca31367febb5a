# msprobe/<tool>: one recipe for every tool; `msprobe image build` prepares the context (wheels/ with the
# tool's wheel, its sibling wheels and third-party wheels fetched for the base's Python) and builds it with
# --network none. BASE provides python3 and the framework (default: the CPU bases built here; an Ascend
# image with CANN + torch + torch_npu or MindSpore works the same way: the venv sees its packages).
ARG BASE=msprobe/base:py311
FROM ${BASE} AS build
ARG REQUIREMENT
# names this stage's image, which `msprobe image build` removes once the tool's image is tagged (no dangling ~285 MB)
LABEL msprobe.build-stage="${REQUIREMENT}"
COPY wheels/ /tmp/msprobe-build/wheels/
# no .pyc files and no pip in the venv: the config-check and ckpt-compare images stay under 300 MB
RUN python3 -m venv --system-site-packages /opt/msprobe \
 && /opt/msprobe/bin/python -m pip install --no-index --no-cache-dir --no-compile --disable-pip-version-check \
        --find-links /tmp/msprobe-build/wheels "${REQUIREMENT}" \
 && /opt/msprobe/bin/python -m pip uninstall --yes --quiet pip setuptools \
 && PYTHONDONTWRITEBYTECODE=1 /opt/msprobe/bin/msprobe --help > /dev/null

# only the venv crosses over: the wheels stay behind in the build stage
FROM ${BASE}
ARG REQUIREMENT
COPY --from=build /opt/msprobe /opt/msprobe
RUN mkdir -p /data && chmod 1777 /data
ENV PATH=/opt/msprobe/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
LABEL org.opencontainers.image.title="${REQUIREMENT}"
USER 1000:1000
WORKDIR /data
ENTRYPOINT ["msprobe"]
CMD ["--help"]
