"""A threadpoolctl controller for fastgemm's CPU thread pool.

With it, ``threadpoolctl.threadpool_limits(1)`` limits fastgemm as it limits OpenBLAS
and OpenMP, and ``threadpool_info()`` lists fastgemm's pool. threadpoolctl finds the
pool by the loaded library's file name and calls its C entry points.
"""

import threadpoolctl

if hasattr(threadpoolctl, "LibController") and hasattr(threadpoolctl, "register"):

    class FastgemmController(threadpoolctl.LibController):
        user_api = "fastgemm"
        internal_api = "fastgemm"
        filename_prefixes = ("libfastgemm",)

        def get_num_threads(self):
            return self.dynlib.fastgemm_get_num_threads()

        def set_num_threads(self, num_threads):
            self.dynlib.fastgemm_set_num_threads(int(num_threads))

        def get_version(self):
            from . import _fastgemm

            return _fastgemm.__version__

    threadpoolctl.register(FastgemmController)
