"""Object-storage settings in one place: endpoint, region, profile, path-style, plain HTTP.

The settings come from the environment (``OVERLAP_S3_ENDPOINT``, ``OVERLAP_S3_REGION``,
``OVERLAP_S3_PROFILE``, ``OVERLAP_S3_PATH_STYLE``, ``OVERLAP_S3_ALLOW_HTTP``) or from the
``storage:`` section of a config file (``endpoint``, ``region``, ``profile``, ``path_style``,
``allow_http``); the file's values are put into the environment by :func:`apply`, so that one
path serves the driver and, through the Ray ``runtime_env``'s ``env_vars``
(:func:`worker_env`), every worker. From there they are handed identically to:

* pyarrow's ``S3FileSystem`` (:func:`pyarrow_s3`): ``endpoint_override``, ``scheme``,
  ``region``, ``force_virtual_addressing``;
* deltalake's ``storage_options`` (:func:`deltalake_options`): ``AWS_ENDPOINT_URL``,
  ``AWS_REGION``, ``AWS_ALLOW_HTTP``, ``AWS_VIRTUAL_HOSTED_STYLE_REQUEST``, ``AWS_PROFILE``;
* pyiceberg's FileIO properties (:func:`iceberg_properties`): ``s3.endpoint``,
  ``s3.region``, ``s3.force-virtual-addressing``, ``s3.profile-name``.

A profile is the name of an AWS credentials profile; the AWS SDKs (pyarrow's, deltalake's)
read it from ``AWS_PROFILE``, which :func:`apply` sets. Keys and secrets are never settings
here: they stay where the AWS SDKs look for them (the profile's file, ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` in the environment, an instance role), and nothing of this module
is written into a manifest or a log line.

Source: the names are those of pyarrow's ``S3FileSystem`` and of object_store's
``AmazonS3ConfigKey`` (deltalake) and pyiceberg's ``pyiceberg.io`` constants.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, fields
from typing import Any

from pipeline.errors import ConfigError, did_you_mean

# Setting -> environment variable.
ENV_VARS = {
    "endpoint": "OVERLAP_S3_ENDPOINT",
    "region": "OVERLAP_S3_REGION",
    "profile": "OVERLAP_S3_PROFILE",
    "path_style": "OVERLAP_S3_PATH_STYLE",
    "allow_http": "OVERLAP_S3_ALLOW_HTTP",
}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class StorageOptions:
    """Object-storage settings (see the module docstring).

    Attributes:
        endpoint: an S3-compatible endpoint URL, ``http(s)://host:port`` (None: AWS).
        region: the region (None: the SDK's default).
        profile: an AWS credentials profile name (None: the SDK's default chain).
        path_style: address buckets as ``endpoint/bucket/key`` (True, what MinIO and moto
            expect) or ``bucket.endpoint/key`` (False); None: each library's default
            (path-style with an endpoint for pyarrow and deltalake).
        allow_http: allow a plain ``http://`` endpoint (refused otherwise).

    """

    endpoint: str | None = None
    region: str | None = None
    profile: str | None = None
    path_style: bool | None = None
    allow_http: bool = False

    def __repr__(self) -> str:  # the profile and endpoint stay out of tracebacks and logs
        set_ = [f.name for f in fields(self) if getattr(self, f.name) not in (None, False)]
        return f"StorageOptions(set: {', '.join(set_) or 'nothing'})"

    @property
    def is_set(self) -> bool:
        """True when any setting differs from the default."""
        return self != StorageOptions()

    def check(self) -> StorageOptions:
        """Return self after checking the endpoint.

        Raises:
            ConfigError: an endpoint without ``http://`` or ``https://``, or a plain-HTTP
                endpoint without ``allow_http``.

        """
        if self.endpoint is not None:
            scheme = self.endpoint.split("://", 1)[0].lower() if "://" in self.endpoint else ""
            if scheme not in ("http", "https"):
                raise ConfigError("storage.endpoint: expected an http:// or https:// URL",
                                  hint="e.g. https://minio.example.com:9000")
            if scheme == "http" and not self.allow_http:
                raise ConfigError("storage.endpoint is plain http:// but storage.allow_http "
                                  "is not set",
                                  hint="set OVERLAP_S3_ALLOW_HTTP=1 (or allow_http: true) for "
                                       "a trusted network, or use https://")
        return self


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"storage.{key}: expected true or false")


def from_mapping(values: Mapping[str, Any] | None, *, where: str = "storage") -> StorageOptions:
    """Build the options from a config file's ``storage:`` section.

    Raises:
        ConfigError: an unknown key (with a "did you mean") or a bad value.

    """
    out: dict[str, Any] = {}
    for key, value in (values or {}).items():
        if key not in ENV_VARS:
            raise ConfigError(f"{where}: unknown setting {key!r}",
                              hint=did_you_mean(str(key), tuple(ENV_VARS)))
        if value is None:
            continue
        if key in ("path_style", "allow_http"):
            out[key] = _as_bool(key, value)
        elif not isinstance(value, str) or not value:
            raise ConfigError(f"{where}.{key}: expected a non-empty string")
        else:
            out[key] = value
    return StorageOptions(**out).check()


def from_env(environ: Mapping[str, str] | None = None) -> StorageOptions:
    """Read the options from ``OVERLAP_S3_*`` variables (``os.environ`` by default).

    Raises:
        ConfigError: a bad value (named by its variable).

    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for key, var in ENV_VARS.items():
        raw = env.get(var)
        if raw is None or raw == "":
            continue
        try:
            values[key] = _as_bool(key, raw) if key in ("path_style", "allow_http") else raw
        except ConfigError:
            raise ConfigError(f"{var}: expected true or false") from None
    return StorageOptions(**values).check()


def to_env(options: StorageOptions) -> dict[str, str]:
    """The ``OVERLAP_S3_*`` variables (and ``AWS_PROFILE``) that carry ``options``."""
    env: dict[str, str] = {}
    for key, var in ENV_VARS.items():
        value = getattr(options, key)
        if value is None or (key == "allow_http" and not value):
            continue
        env[var] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    if options.profile:
        env["AWS_PROFILE"] = options.profile
    return env


def apply(options: StorageOptions, environ: MutableMapping[str, str] | None = None) -> None:
    """Put ``options`` into the environment (file settings over variables), for every library.

    The config file wins over ``OVERLAP_S3_*`` variables only for the keys it sets.
    """
    env = os.environ if environ is None else environ
    env.update(to_env(options))


def current() -> StorageOptions:
    """The options in force in this process (:func:`from_env`)."""
    return from_env()


def worker_env() -> dict[str, str]:
    """Variables a worker needs to see the storage as the driver does (Ray ``env_vars``).

    The ``OVERLAP_S3_*`` variables and ``AWS_PROFILE`` when set; never a key or secret (a
    worker's credentials come from its own node).
    """
    options = current()
    env = to_env(options)
    if "AWS_PROFILE" not in env and os.environ.get("AWS_PROFILE"):
        env["AWS_PROFILE"] = os.environ["AWS_PROFILE"]
    return env


def _host_and_scheme(options: StorageOptions) -> tuple[str | None, str | None]:
    if options.endpoint is None:
        return None, None
    scheme, rest = options.endpoint.split("://", 1)
    return rest.rstrip("/"), scheme.lower()


def pyarrow_s3(options: StorageOptions | None = None) -> Any:
    """A pyarrow ``S3FileSystem`` built with the options (none set: pyarrow's defaults)."""
    import pyarrow.fs as pafs

    options = current() if options is None else options
    host, scheme = _host_and_scheme(options)
    kwargs: dict[str, Any] = {}
    if host is not None:
        kwargs["endpoint_override"] = host
        kwargs["scheme"] = scheme
    if options.region is not None:
        kwargs["region"] = options.region
    if options.path_style is not None:
        kwargs["force_virtual_addressing"] = not options.path_style
    return pafs.S3FileSystem(**kwargs)


def deltalake_options(options: StorageOptions | None = None) -> dict[str, str]:
    """The deltalake ``storage_options`` for the options (empty when none is set)."""
    options = current() if options is None else options
    out: dict[str, str] = {}
    if options.endpoint is not None:
        out["AWS_ENDPOINT_URL"] = options.endpoint.rstrip("/")
    if options.region is not None:
        out["AWS_REGION"] = options.region
    if options.allow_http:
        out["AWS_ALLOW_HTTP"] = "true"
    if options.path_style is not None:
        out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if options.path_style else "true"
    if options.profile is not None:
        out["AWS_PROFILE"] = options.profile
    return out


def iceberg_properties(options: StorageOptions | None = None) -> dict[str, str]:
    """The pyiceberg catalog/FileIO properties for the options (empty when none is set)."""
    options = current() if options is None else options
    out: dict[str, str] = {}
    if options.endpoint is not None:
        out["s3.endpoint"] = options.endpoint.rstrip("/")
    if options.region is not None:
        out["s3.region"] = options.region
    if options.path_style is not None:
        out["s3.force-virtual-addressing"] = "false" if options.path_style else "true"
    if options.profile is not None:
        out["s3.profile-name"] = options.profile
    return out


__all__ = ["ENV_VARS", "StorageOptions", "apply", "current", "deltalake_options", "from_env",
           "from_mapping", "iceberg_properties", "pyarrow_s3", "to_env", "worker_env"]
