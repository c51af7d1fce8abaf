"""Build glue pyproject.toml cannot express: the cffi extension, the stable-ABI wheel tag and package discovery."""

from setuptools import find_packages, setup

setup(
    cffi_modules=["csrc/build_ffi.py:ffibuilder"],
    # every xai_plugins.* package is found; templates/ ships as xai_plugins.templates (package-dir in pyproject)
    packages=[*find_packages(include=["xai_plugins", "xai_plugins.*"]), "xai_plugins.templates"],
    # cffi builds _core against the limited API (_core.abi3.so): one wheel serves CPython >= 3.10
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
