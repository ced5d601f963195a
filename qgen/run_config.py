"""``--config run.yaml``: a command's options from a file (YAML, or JSON, which YAML reads too).

The file maps option names (``max_seconds`` or ``max-seconds``, as the flag says them: ``format`` for
``--format``, ``model`` for ``--model``) to values, e.g. for ``qgen train``::

    epochs: 40
    hidden: 128
    layers: 1
    learning_rate: 3e-3
    teacher_forcing: 1.0

Options given on the command line win over the file; the file wins over the defaults. It works as
click's ``default_map``, so every option is checked and converted exactly as when typed; a key that
names no option of the command is refused, naming the file and the key.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click
import typer


def load_config(ctx: click.Context, _param: click.Parameter, path: Optional[Path]) -> Optional[Path]:
    """The ``--config`` callback (eager: it runs before the other options are read)."""
    if path is None:
        return None
    import yaml

    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise typer.BadParameter(f"{path}: not a readable YAML/JSON file ({' '.join(str(err).split())[:160]})")
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise typer.BadParameter(f"{path}: expected a mapping of option names to values, got {type(values).__name__}")
    # Each option by its parameter's name and by each of its flags (``format`` for --format, whose parameter
    # is input_format; ``model`` for --checkpoint/--model).
    names: dict[str, str] = {}
    for param in ctx.command.params:
        if param.name and param.name != "config":
            names[param.name] = param.name
            for flag in getattr(param, "opts", []):
                if flag.startswith("--"):
                    names.setdefault(flag[2:].replace("-", "_"), param.name)
    options: dict[str, Any] = {}
    for key, value in values.items():
        name = names.get(str(key).replace("-", "_"))
        if name is None:
            raise typer.BadParameter(f"{path}: {key!r} is not an option of this command (options: "
                                     f"{', '.join(sorted(names))})")
        options[name] = [str(v) for v in value] if isinstance(value, list) else value
    ctx.default_map = {**(ctx.default_map or {}), **options}
    return path


def config_option() -> Any:
    return typer.Option(None, "--config", help="Options from a YAML/JSON file (the command line wins).",
                        callback=load_config, is_eager=True, exists=True, dir_okay=False)
