"""The device names a run config accepts and their resolution at run start: ``runs.device``, re-exported
under the name the training stages and the command line have always imported it by."""

from countdown_study.runs.device import (
    DEFAULT_DEVICE,
    DEVICES,
    check_device,
    describe_device,
    prepare_device,
    resolve_device,
)

__all__ = ["DEFAULT_DEVICE", "DEVICES", "check_device", "describe_device", "prepare_device", "resolve_device"]
