"""A Dockerfile that builds wheels in one stage and unpacks them into site-packages in another (XTuner's image:
`pip wheel -w ${FLASH_ATTN_DIR} .` in a flash-attention clone, `unzip ${FLASH_ATTN_DIR}/*.whl -d
${PYTHON_SITE_PACKAGE_PATH}`): the unzip installs the package the clone's folder builds (rlcompat/knowledge/wheel_folders.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from rlcompat.knowledge.wheel_folders import built_folders
from rlcompat.lang.wheel_unzip import unzipped_wheels

SM75 = resolve_target("sm75")
pytestmark = pytest.mark.usefixtures("fresh_verl_detection")

DOCKERFILE = """FROM nvcr.io/nvidia/pytorch:25.03-py3 AS setup_env
ARG FLASH_ATTN_DIR=/tmp/flash-attn
ARG FLASH_ATTN3_DIR=/tmp/flash-attn3
ARG GEMM_DIR=/tmp/gemm
ARG CODESPACE=/root/codespace
WORKDIR ${CODESPACE}

FROM setup_env AS flash_attn
ARG FLASH_ATTN_DIR
ARG FLASH_ATTN3_DIR
RUN git clone $(echo ${FLASH_ATTN_URL} | cut -d '@' -f 1) && cd ${CODESPACE}/flash-attention
WORKDIR ${CODESPACE}/flash-attention
RUN cd hopper && FLASH_ATTENTION_FORCE_BUILD=TRUE pip wheel -w ${FLASH_ATTN3_DIR} -v --no-deps .
RUN FLASH_ATTENTION_FORCE_BUILD=TRUE pip wheel -w ${FLASH_ATTN_DIR} -v --no-deps .

FROM setup_env AS gemm
ARG GEMM_DIR
RUN git clone https://github.com/InternLM/GroupedGEMM && cd GroupedGEMM && pip wheel -w ${GEMM_DIR} --no-deps .

FROM setup_env AS final
ARG PYTHON_SITE_PACKAGE_PATH=/usr/local/lib/python3.12/dist-packages
ARG FLASH_ATTN_DIR
ARG FLASH_ATTN3_DIR
ARG GEMM_DIR
COPY --from=flash_attn ${FLASH_ATTN_DIR} ${FLASH_ATTN_DIR}
COPY --from=flash_attn ${FLASH_ATTN3_DIR} ${FLASH_ATTN3_DIR}
COPY --from=gemm ${GEMM_DIR} ${GEMM_DIR}
RUN unzip ${FLASH_ATTN_DIR}/*.whl -d ${PYTHON_SITE_PACKAGE_PATH}
RUN unzip ${FLASH_ATTN3_DIR}/*.whl -d ${PYTHON_SITE_PACKAGE_PATH}
RUN unzip ${GEMM_DIR}/*.whl -d ${PYTHON_SITE_PACKAGE_PATH}
RUN unzip ${FLASH_ATTN_DIR}/*.whl -d /tmp/unpacked
"""


def test_the_folders_a_clone_of_a_known_source_build_fills():
    folders = built_folders(DOCKERFILE)
    assert {k: v[0] for k, v in folders.items()} == {"${FLASH_ATTN_DIR}": "flash-attn",
                                                      "${FLASH_ATTN3_DIR}": "flash-attn-3"}


def test_only_an_unzip_into_site_packages_installs():
    assert unzipped_wheels("unzip /w/*.whl -d /usr/lib/python3/dist-packages".split()) == ["/w/*.whl"]
    assert unzipped_wheels("unzip x.whl -d ${PYTHON_SITE_PACKAGE_PATH}".split()) == ["x.whl"]
    assert unzipped_wheels("unzip /w/*.whl -d /tmp/x".split()) == []
    assert unzipped_wheels("unzip data.zip -d /usr/lib/python3/site-packages".split()) == []


def test_the_unzipped_flash_attention_wheels_are_reported_where_installed(tmp_path: Path):
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    found = sorted((f.location.line, f.code) for f in scan_paths([str(tmp_path / "Dockerfile")], SM75).findings
                   if f.code == "RLC603")
    lines = DOCKERFILE.splitlines()
    fa2 = lines.index("RUN unzip ${FLASH_ATTN_DIR}/*.whl -d ${PYTHON_SITE_PACKAGE_PATH}") + 1
    fa3 = lines.index("RUN unzip ${FLASH_ATTN3_DIR}/*.whl -d ${PYTHON_SITE_PACKAGE_PATH}") + 1
    assert found == [(fa2, "RLC603"), (fa3, "RLC603")]
