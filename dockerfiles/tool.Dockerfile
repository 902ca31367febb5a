# msprobe-<tool> image (one recipe for every tool): repo packages + third-party deps installed offline into /opt/msprobe.
# BASE is msprobe-torch:py311 for tools with dockerfiles/<tool>/uses-torch (set by build_images.sh).
# Built by dockerfiles/build_images.sh, which prepares the context (requirements.txt, third/, local/).
ARG BASE=msprobe-base:py311
FROM ${BASE}
ENV PATH=/opt/msprobe/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# third-party layer first: it is big and changes rarely, so docker's layer cache keeps it
COPY requirements.txt /tmp/msprobe-build/requirements.txt
COPY third/ /tmp/msprobe-build/third/
RUN { test -x /opt/msprobe/bin/python || python3 -m venv /opt/msprobe; } \
 && if [ -s /tmp/msprobe-build/requirements.txt ]; then \
        pip install --no-index --no-cache-dir --find-links /tmp/msprobe-build/third -r /tmp/msprobe-build/requirements.txt; fi \
 && rm -rf /tmp/msprobe-build
COPY local/ /tmp/msprobe-build/local/
RUN pip install --no-index --no-cache-dir --no-deps /tmp/msprobe-build/local/*.whl \
 && rm -rf /tmp/msprobe-build
WORKDIR /work
CMD ["msprobe", "--help"]
