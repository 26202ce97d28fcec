"""What the hostile config.json tests (test_hostile_*_config.py) ask of every reader: any JSON
read as a config.json file ends in a spec, or in one short BadInputError, never another
exception."""

from __future__ import annotations

import json
from collections.abc import Callable

from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.configs import config_from_bytes
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

# characters: a file path, a field name, a value cut to 60, the list of supported families
# (35-odd model_types, ~330 characters, as issue 16 adds the encoder families)
MAX_MESSAGE = 600


def only_bad_input(config: object, check: Callable[[Spec], None]) -> None:
    """`config` as config.json bytes: a spec that `check` (asserting what any spec the reader
    returns must hold) accepts, or a BadInputError of one printable line under MAX_MESSAGE."""
    try:
        spec = spec_from_config(config_from_bytes(json.dumps(config).encode(), "c.json"), "x")
    except BadInputError as exc:
        assert len(exc.message) < MAX_MESSAGE and "\n" not in exc.message, exc.message
        assert exc.message.isprintable(), exc.message
    else:
        check(spec)
