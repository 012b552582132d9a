"""Build hook: the scoring kernels compiled ahead of time (see pipeline/compiled.py).

Everything else about the package is in pyproject.toml. When the kernels cannot be compiled
here (no C compiler), the package still installs and compiles them on first use instead.
"""

import os
import shutil
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildKernels(build_ext):
    """Compile pipeline._kernels with numba's ahead-of-time compiler."""

    def build_extension(self, ext: Extension) -> None:
        """Build the module into place, or warn and leave it out."""
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        target = self.get_ext_fullpath(ext.name)
        try:
            from pipeline.compiled import build

            with tempfile.TemporaryDirectory() as tmp:
                built = build(tmp)
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                shutil.copyfile(built, target)
        except Exception as e:  # noqa: BLE001 - optional: the kernels then compile on first use
            print(f"warning: kernels not compiled ahead of time ({e}); they will compile on "
                  "first use", file=sys.stderr)
            # Leave the module out of the outputs, so the install goes on without it.
            self.extensions = [x for x in self.extensions if x is not ext]


setup(ext_modules=[Extension("pipeline._kernels", sources=[])],
      cmdclass={"build_ext": BuildKernels})
