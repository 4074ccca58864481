#!/usr/bin/env python3
"""Runs a WASI module (wasm32-wasip1) under Wasmtime from PyPI and exits with the module's exit status.

    python3 scripts/wasi-run.py [--dir HOST[::GUEST]]... [--env NAME=VALUE]... MODULE.wasm [ARGUMENTS]...

The module sees ARGUMENTS after its own path, the caller's standard streams, every `UFORM_*` variable of the caller's
environment plus each --env, and these folders: the working directory as `.` and at its own absolute path (so that
absolute paths under it, such as UFORM_TEST_DATA, resolve), a fresh empty host folder as `/tmp` (removed after the
run; WASI has no temporary folders of its own), and each --dir (at its own path unless GUEST names
another). The interpreter needs `wasmtime` (scripts/wasi-check.sh installs the pinned version in build/wasi/venv).
The engine has SIMD128 and not the relaxed-SIMD proposal, which the library does not need. CMake's WASI toolchain
(cmake/toolchains/wasi.cmake) names this script as ctest's emulator.
"""

import argparse
import os
import shutil
import sys
import tempfile

try:
    import wasmtime
except ImportError:
    sys.exit("wasi-run: this interpreter lacks wasmtime; run scripts/wasi-check.sh, or use build/wasi/venv/bin/python3")


def parse(argv):
    """The runner's options, then the module and its arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", action="append", default=[], help="HOST[::GUEST]: a folder the module may open")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE: a variable the module sees")
    parser.add_argument("module", help="the .wasm file")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the module's arguments")
    return parser.parse_args(argv)


def configure(options, scratch):
    """The WASI view of the host: arguments, environment, streams and preopened folders (`scratch` as /tmp)."""
    config = wasmtime.WasiConfig()
    config.argv = [options.module] + options.arguments
    variables = {name: value for name, value in os.environ.items() if name.startswith("UFORM_")}
    for pair in options.env:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            sys.exit(f"wasi-run: --env wants NAME=VALUE, not {pair!r}")
        variables[name] = value
    config.env = sorted(variables.items())
    config.inherit_stdin()
    config.inherit_stdout()
    config.inherit_stderr()
    here = os.getcwd()
    config.preopen_dir(here, ".")
    config.preopen_dir(here, here)
    config.preopen_dir(scratch, "/tmp")
    for folder in options.dir:
        host, _, guest = folder.partition("::")
        if not os.path.isdir(host):
            sys.exit(f"wasi-run: --dir {host!r} is not a folder")
        config.preopen_dir(host, guest or os.path.abspath(host))
    return config


def run(options):
    """Instantiates the module, calls `_start`, and answers its exit status (0 when it returns)."""
    settings = wasmtime.Config()
    settings.wasm_relaxed_simd = False  # the library promises to need SIMD128 alone: hold it to that
    engine = wasmtime.Engine(settings)
    store = wasmtime.Store(engine)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    scratch = tempfile.mkdtemp(prefix="uform-wasi-")
    try:
        store.set_wasi(configure(options, scratch))
        return start(engine, store, linker, options.module)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def start(engine, store, linker, path):
    """Loads the module, calls `_start`, and answers its exit status."""
    try:
        module = wasmtime.Module.from_file(engine, path)
    except (OSError, wasmtime.WasmtimeError) as error:
        sys.exit(f"wasi-run: cannot load {path}: {error}")
    instance = linker.instantiate(store, module)
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as exit_trap:
        return exit_trap.code
    except wasmtime.Trap as trap:
        print(f"wasi-run: {path} trapped: {trap}", file=sys.stderr)
        return 134
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    sys.exit(run(parse(sys.argv[1:])))
