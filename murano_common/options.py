"""Typed INI configuration: every option declared once, with its type, default and help.

An :class:`Option` is one setting; a :class:`Section` groups the options of one
``[section]``; a :class:`Schema` is the set of sections one file may hold.
:meth:`Schema.load` reads an INI file (or text), then ``MURANO_<SECTION>_<OPTION>``
environment variables (when given an environment), then explicit overrides, and
returns :class:`Values`: typed, read as attributes (``values.rabbitmq.port``) or
by name (``values["rabbitmq"]["port"]``). Options of a ``[DEFAULT]`` section are
attributes of the values themselves (``values.debug``), as in oslo.config.
:meth:`Schema.sample` renders a sample file listing every option with its help
and default; ``python -m murano_common.options MODULE`` prints the sample of
``MODULE.SCHEMA``.

``[DEFAULT]`` is an ordinary section here: its values are not inherited by the
others. Values may be quoted (``'...'`` or ``"..."``, as oslo.config allows); an
empty value of an option whose default is None means "not set" (None).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

#: The environment variables that override options: ``MURANO_<SECTION>_<OPTION>``.
ENV_PREFIX = "MURANO_"
#: The section whose options are attributes of :class:`Values` itself.
DEFAULT = "DEFAULT"


class ConfigError(ValueError):
    """Configuration values are unreadable, unknown or ill-typed; the message says where,
    one line per problem (``problems``)."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)

    def lines(self, prefix: str = "error: ") -> str:
        """Every problem on a line of its own, after ``prefix``."""
        return "\n".join(prefix + problem for problem in self.problems)


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(text)


#: Each option type: how its text is read, and what the text must be (for messages and samples).
_TYPES: dict[type, tuple[Callable[[str], Any], str]] = {
    str: (str, "text"),
    int: (int, "a whole number"),
    float: (float, "a number"),
    bool: (_parse_bool, "true or false"),
}


class Option:
    """One setting: ``name``, ``type`` (str, int, float or bool), ``default`` and ``help``.

    ``sample`` is the value samples show instead of the default (for defaults that
    depend on the platform). A None default means "not set"; the help says what then.
    """

    __slots__ = ("name", "type", "default", "help", "sample")

    def __init__(self, name: str, type: type, default: Any, help: str,
                 sample: str | None = None) -> None:
        if type not in _TYPES:
            raise TypeError(f"option {name!r}: type must be str, int, float or bool")
        if default is not None and not isinstance(default, type) and not (
                type is float and isinstance(default, int) and not isinstance(default, bool)):
            raise TypeError(f"option {name!r}: default {default!r} is not a {type.__name__}")
        self.name = name
        self.type = type
        self.default = default
        self.help = help
        self.sample = sample

    def parse(self, text: str) -> Any:
        """The typed value of ``text``; ValueError naming what was expected."""
        text = _unquote(text.strip())
        if text == "" and self.default is None:
            return None
        parser, expected = _TYPES[self.type]
        try:
            return parser(text)
        except ValueError:
            raise ValueError(f"is not {expected}") from None

    def sample_text(self) -> str:
        """The default as a sample file writes it."""
        if self.sample is not None:
            return self.sample
        value = self.default
        if value is None:
            return ""
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)


class Section:
    """The options of one ``[name]`` section.

    A ``free_form`` section takes any option as text (settings handed on to another
    library, e.g. ``[keystone_authtoken]``); its declared options are typed as usual.
    """

    __slots__ = ("name", "help", "options", "free_form")

    def __init__(self, name: str, help: str, *options: Option, free_form: bool = False) -> None:
        self.name = name
        self.help = help
        self.options: dict[str, Option] = {}
        self.free_form = free_form
        for option in options:
            if option.name in self.options:
                raise ValueError(f"[{name}] declares option {option.name!r} twice")
            self.options[option.name] = option

    def merged(self, other: Section) -> Section:
        """This section with ``other``'s options added (both describe one ``[name]``)."""
        help_text = "\n".join(text for text in (self.help, other.help) if text)
        return Section(self.name, help_text, *self.options.values(), *other.options.values(),
                       free_form=self.free_form or other.free_form)


class SectionValues(MutableMapping[str, "Any"]):
    """One section's values, by attribute (``section.port``) or by name (``section["port"]``)."""

    def __init__(self, name: str, values: dict[str, Any]) -> None:
        self._name = name
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"[{self._name}] has no option {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._values[name] = value

    def __delitem__(self, name: str) -> None:
        del self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<[{self._name}] {self._values!r}>"


class Values(Mapping[str, SectionValues]):
    """Every section's values; ``source`` names where they were read from.

    Sections are attributes (``values.rabbitmq``) and items (``values["rabbitmq"]``);
    the options of ``[DEFAULT]`` are attributes too (``values.debug``).
    """

    def __init__(self, sections: dict[str, SectionValues], source: str) -> None:
        self._sections = sections
        self.source = source

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._sections:
            return self._sections[name]
        defaults = self._sections.get(DEFAULT)
        if defaults is not None and name in defaults:
            return defaults[name]
        raise AttributeError(f"no section or [DEFAULT] option {name!r}")

    def __getitem__(self, name: str) -> SectionValues:
        return self._sections[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)

    def __repr__(self) -> str:
        return f"<Values from {self.source}: {self._sections!r}>"


class Schema:
    """The sections one configuration file may hold.

    A ``lenient`` schema ignores sections and options it does not declare, and
    repeated options (the agent reads files written for other agent versions);
    otherwise each of those is a :class:`ConfigError`.
    """

    def __init__(self, *sections: Section, title: str = "", lenient: bool = False) -> None:
        self.sections: dict[str, Section] = {}
        for section in sections:
            known = self.sections.get(section.name)
            self.sections[section.name] = known.merged(section) if known else section
        self.title = title
        self.lenient = lenient
        clashes = set(self.sections) & set(getattr(self.sections.get(DEFAULT), "options", ()))
        if clashes:
            raise ValueError(f"[DEFAULT] options named like sections: {sorted(clashes)}")

    def defaults(self, source: str = "<defaults>") -> Values:
        """Every option at its default."""
        return Values({name: SectionValues(name, {o.name: o.default for o in s.options.values()})
                       for name, s in self.sections.items()}, source)

    def load(self, path: str | os.PathLike[str] | None = None, *, text: str | None = None,
             name: str | None = None, environ: Mapping[str, str] | None = None,
             overrides: Mapping[str, Any] | None = None) -> Values:
        """Defaults, then the INI file ``path`` (or INI ``text``), then ``environ``'s
        ``MURANO_<SECTION>_<OPTION>`` variables, then ``overrides``.

        ``name`` is how messages refer to the file (default: its path, or ``<text>``).
        ``overrides`` maps ``"section.option"`` (or ``"option"`` for ``[DEFAULT]``) to
        values (given as text or as anything whose ``str`` is the text). Environment
        variables that name no declared option are ignored: the environment is shared
        with other programs.
        """
        source = name or (os.fspath(path) if path is not None else "<text>")
        values = self.defaults(source)
        if path is not None:
            try:
                with open(path, encoding="utf-8") as stream:
                    text = stream.read()
            except OSError as exc:
                raise ConfigError(f"cannot read {source}: {exc.strerror}") from None
        problems: list[str] = []
        if text is not None:
            self._read_ini(values, text, source, problems)
        for key, value in (environ or {}).items():
            found = self._env_option(key)
            if found is not None:
                self._set(values, found[0], found[1], value, f"environment variable {key}",
                          problems)
        for key, value in (overrides or {}).items():
            section, _, option = key.rpartition(".")
            section = section or DEFAULT
            if section not in self.sections:
                problems.append(f"override {key!r}: unknown section {section!r}")
                continue
            self._set(values, section, option, str(value), f"override {key!r}", problems)
        if problems:
            raise ConfigError(*problems)
        return values

    def sample(self) -> str:
        """A configuration file listing every option, its help and its default (commented)."""
        lines = _comment(self.title)
        for section in self.sections.values():
            lines += ["", f"[{section.name}]", *_comment(section.help)]
            for option in section.options.values():
                kind = "" if option.type is str else f" ({_TYPES[option.type][1]})"
                lines += ["", *_comment(option.help + kind),
                          f"#{option.name} = {option.sample_text()}".rstrip()]
        return "\n".join(lines).lstrip("\n") + "\n"

    def _read_ini(self, values: Values, text: str, source: str, problems: list[str]) -> None:
        import configparser  # here: most starts read no file
        # No default section: [DEFAULT] is read as a section of its own.
        parser = configparser.ConfigParser(interpolation=None, strict=not self.lenient,
                                           default_section="\0")
        try:
            parser.read_string(text, source=source)
        except configparser.Error as exc:
            raise ConfigError(f"{source}: not a valid INI file: {exc}") from None
        for section in parser.sections():
            if section not in self.sections:
                if self.lenient:
                    continue
                problems.append(f"{source}: unknown section [{section}]")
                continue
            for option, value in parser.items(section, raw=True):
                self._set(values, section, option, value, source, problems)

    def _env_option(self, key: str) -> tuple[str, str] | None:
        """The (section, option) a ``MURANO_<SECTION>_<OPTION>`` variable names, if declared.

        Sections may hold underscores (``MURANO_LOCAL_CLOUD_STATE_DIR``): the longest
        section name that fits wins.
        """
        if not key.startswith(ENV_PREFIX):
            return None
        rest = key[len(ENV_PREFIX):].lower()
        fitting = [name for name in self.sections if rest.startswith(name.lower() + "_")]
        if not fitting:
            return None
        section = max(fitting, key=len)
        option = rest[len(section) + 1:]
        return (section, option) if option in self.sections[section].options else None

    def _set(self, values: Values, section_name: str, option_name: str, text: str,
             source: str, problems: list[str]) -> None:
        """Set one option from its text, or add what is wrong with it to ``problems``."""
        section = self.sections[section_name]
        where = f"{source} [{section_name}]"
        option = section.options.get(option_name)
        if option is None:
            if section.free_form:
                values[section_name][option_name] = _unquote(text.strip())
            elif not self.lenient:
                problems.append(f"{where}: unknown option {option_name!r}")
            return
        try:
            values[section_name][option_name] = option.parse(text)
        except ValueError as exc:
            problems.append(f"{where}: option {option_name!r} = {text.strip()!r} {exc}")


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _comment(text: str) -> list[str]:
    import textwrap
    return [f"# {line}".rstrip() for paragraph in text.splitlines()
            for line in (textwrap.wrap(paragraph, 77) or [""])]


def main(argv: list[str] | None = None) -> int:
    """``python -m murano_common.options MODULE``: print the sample of ``MODULE.SCHEMA``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m murano_common.options MODULE", file=sys.stderr)
        return 2
    sys.stdout.write(importlib.import_module(args[0]).SCHEMA.sample())
    return 0


if __name__ == "__main__":
    sys.exit(main())
