"""Build hook: the scoring kernels compiled ahead of time (see pipeline/compiled.py).

Everything else about the package is in pyproject.toml. Two extension modules:
``pipeline._kernels`` (every kernel, for the architecture's generic CPU) and, on x86-64,
``pipeline._kernels_v3`` (the bootstrap's and ROUGE's kernels for x86-64-v3 CPUs). When the
kernels cannot be compiled here (no C compiler), the package still installs and compiles them
on first use instead (numba's JIT).

A built module is kept under ``build/kernels/`` of the source tree, named by a digest of the
kernel sources, numba's version and the Python ABI, so installing again from the same tree
(another extra, ``pip install -e '.[test]'`` after ``pip install -e .``, a wheel after an
editable install) copies it instead of compiling again (1-2 minutes).
"""

import hashlib
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
# x86-64 machine names (Linux, macOS, Windows)
X86_64 = {"x86_64", "amd64", "AMD64"}


def _cache_path(target: str) -> str:
    """Where a module built from these sources for ``target`` is kept (build/kernels/)."""
    import numba

    from pipeline.compiled import source_digest

    key = hashlib.sha256(repr((source_digest(), target, numba.__version__,
                               sysconfig.get_config_var("EXT_SUFFIX"), sys.version,
                               platform.machine())).encode()).hexdigest()[:16]
    return os.path.join(HERE, "build", "kernels", f"{target}-{key}.so")


class BuildKernels(build_ext):
    """Compile pipeline._kernels (and _kernels_v3) with numba's ahead-of-time compiler."""

    def build_extension(self, ext: Extension) -> None:
        """Build the module into place (or copy it from build/kernels/), or warn and skip it."""
        sys.path.insert(0, HERE)
        target = self.get_ext_fullpath(ext.name)
        cpu = "generic" if ext.name == "pipeline._kernels" else "x86-64-v3"
        try:
            from pipeline.compiled import build

            cached = _cache_path(cpu)
            if os.path.exists(cached):
                print(f"{ext.name}: kernels already compiled from these sources ({cached})",
                      file=sys.stderr)
            else:
                print(f"{ext.name}: compiling the kernels for the {cpu} CPU (numba's "
                      "ahead-of-time compiler: about a minute, longer under load)...",
                      file=sys.stderr, flush=True)
                start = time.perf_counter()
                with tempfile.TemporaryDirectory() as tmp:
                    built = build(tmp, target=cpu)
                    os.makedirs(os.path.dirname(cached), exist_ok=True)
                    shutil.copyfile(built, cached + ".tmp")
                    os.replace(cached + ".tmp", cached)
                print(f"{ext.name}: compiled in {time.perf_counter() - start:.0f} s",
                      file=sys.stderr)
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copyfile(cached, target)
        except Exception as e:  # noqa: BLE001 - optional: the kernels then compile on first use
            print(f"warning: {ext.name} not compiled ahead of time ({e}); the kernels will "
                  "compile on first use", file=sys.stderr)
            # Leave the module out of the outputs, so the install goes on without it.
            self.extensions = [x for x in self.extensions if x is not ext]


EXTENSIONS = [Extension("pipeline._kernels", sources=[])]
if platform.machine() in X86_64:
    EXTENSIONS.append(Extension("pipeline._kernels_v3", sources=[]))

setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": BuildKernels})
