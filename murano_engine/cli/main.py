"""``murano-engine``: run MuranoPL methods and check packages from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import murano_engine
from murano_engine.cli.lifetime import exit_now, long_lived

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn

RECURSION_LIMIT = 100_000


def console() -> NoReturn:
    """The ``murano-engine`` command."""
    exit_now(main())


def run_guarded(body: Callable[[], int], debug: bool = False) -> int:
    """Run a command body; turn errors into one clear message.

    MuranoPL limits its own call depth (2,000 calls), well inside this
    recursion limit, so deep but legitimate recursion works and runaway
    recursion ends in a MuranoPL error rather than Python's.
    """
    sys.setrecursionlimit(RECURSION_LIMIT)
    _when_imported("logging", lambda: _configure_logging(debug))
    try:
        return body()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``... | head``): stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 141
    except Exception as exc:  # noqa: BLE001 - every error ends in one clear message
        print(describe_error(exc), file=sys.stderr)
        if debug:
            import traceback
            traceback.print_exception(exc)
        return 1


def _configure_logging(debug: bool) -> None:
    import logging
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # Commands print a failed task's error themselves, with its MuranoPL stack; --debug
    # logs its Python traceback too.
    logging.getLogger("murano_engine.engine.tasks").setLevel(
        logging.DEBUG if debug else logging.ERROR)


def _when_imported(name: str, then: Callable[[], None]) -> None:
    """Call ``then`` now if module ``name`` is imported, else right after its first import.

    Logging is configured this way: importing it is a tenth of a short run's start-up,
    and only code that logs (natives, the engine's tasks) imports it.
    """
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport) and finder.name == name:
            sys.meta_path.remove(finder)  # an earlier command's, in the same process
    if name in sys.modules:
        then()
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport:
    """A meta path finder that finds nothing itself: once, it has the others find module
    ``name`` and calls ``then`` when the module has run."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            self.then()

        spec.loader.exec_module = exec_module
        return spec


def describe_error(exc: BaseException) -> str:
    """One error message with the MuranoPL stack when code was running."""
    from murano_common.options import ConfigError
    from murano_engine.dsl import errors
    if isinstance(exc, ConfigError):
        return exc.lines()
    stack = errors.stack_of(exc)
    if isinstance(exc, errors.LoadError) or not stack and _is_the_engines_own(exc):
        text = f"error: {exc}"
    else:
        message = getattr(exc, "message", None) or str(exc)
        text = f"error: {errors.python_name(exc)}: {message}"
    if stack:
        text += "\nMuranoPL stack (most recent call last):\n" + errors.format_stack(stack)
    return text


def _is_the_engines_own(exc: BaseException) -> bool:
    """An error of the engine's commands themselves (its message says it all), not one
    MuranoPL knows by name."""
    from murano_engine.dsl import errors
    return (type(exc).__module__.startswith(("murano_engine.", "murano_common."))
            and not isinstance(exc, errors.DslError | errors.MuranoPlException)
            and not getattr(exc, "murano_name", None))


def _parse_arg(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"error: --arg takes NAME=JSON, got {text!r}")
    from murano_common.jsontext import nesting_depth
    from murano_engine.dsl.yaml_loader import MAX_DEPTH
    if nesting_depth(raw) > MAX_DEPTH:
        raise SystemExit(f"error: --arg {name}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw


def _run(options: argparse.Namespace) -> int:
    with long_lived():
        from murano_engine.dsl import errors, model, serializer, values
        from murano_engine.dsl.budget import Budget
        from murano_engine.dsl.executor import Executor
        from murano_engine.dsl.packages import PackageLoader
        from murano_engine.engine.config import load_config
        from murano_engine.engine.interpreter import build_interpreter

        loader = PackageLoader(options.load_packages_from, build_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    class_name, _, method_name = options.target.rpartition(".")
    if not class_name:
        raise SystemExit("error: the target is CLASS.METHOD, e.g. com.example.App.deploy")
    cls = loader.find_class(class_name)
    executor = Executor(loader, budget=Budget.from_config(load_config()))
    kwargs = dict(_parse_arg(a) for a in options.arg)
    method = cls.find_method(method_name)
    if method is None:
        raise errors.NoMethodFound(f"method {method_name!r} is not found in {cls.name}")
    if options.model:
        from murano_engine.dsl.json_loader import load_json
        try:
            text = _read(options.model)
        except OSError as exc:
            raise errors.LoadError(f"cannot read the model: {exc.strerror}",
                                   file=options.model) from None
        data = load_json(text, options.model)
        if isinstance(data, dict) and "Objects" not in data and "?" in data:
            data = {"Objects": data}  # the bare root object, as deploy takes it
        model.load_model(executor, data)
        receiver = next((o for o in executor.objects.values()
                         if o.murano_class.is_compatible(cls)), None)
        if receiver is None:
            raise errors.NoObjectFoundError(f"the model has no object of class {cls.name}")
    elif method.is_static:
        receiver = cls.ref
    else:
        receiver = executor.new_object(cls)
    result = serializer.serialize_value(executor.invoke(method, receiver, [], kwargs, None))
    if _deeper_than(result, values.MAX_DEPTH):  # (indented, 10,000 levels wrote 1 GB)
        raise SystemExit(f"error: the result of {options.target} nests more than "
                         f"{values.MAX_DEPTH} levels deep (a chain of objects, each holding "
                         f"the next?); it is not written")
    # YAML timestamps are datetimes: written as text, as deploy writes them in a state
    print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


def _deeper_than(value: object, limit: int) -> bool:
    """Whether the lists and dicts of ``value`` nest more than ``limit`` levels."""
    level, todo = 0, [value]
    while todo:
        level += 1
        if level > limit:
            return True
        inner = []
        for item in todo:
            if isinstance(item, dict):
                inner.extend(v for v in item.values() if isinstance(v, (dict, list)))
            elif isinstance(item, list):
                inner.extend(v for v in item if isinstance(v, (dict, list)))
        todo = inner
    return False


def _environment(options: argparse.Namespace, action: str) -> int:
    from murano_engine.dsl import concurrency
    concurrency.setup()
    if action == "destroy" and options.environment:
        if options.state or options.load_packages_from:
            raise SystemExit("error: destroy --environment ID takes neither --state nor -l: "
                             "it removes what the local cloud's register names")
        from murano_engine.cli.environments import destroy_environment
        return destroy_environment(options)
    from murano_engine.cli.environments import run_command
    positional = {"deploy": ["model"], "action": ["object_id", "method"]}.get(action, [])
    # ``deploy --state FILE`` with no model carries on an interrupted deploy.
    words = take_positionals(options, action, positional,
                             [getattr(options, n) for n in positional if getattr(options, n)],
                             optional=action == "deploy")
    for name, value in zip(positional[:len(words)], words, strict=True):
        setattr(options, name, value)
    options.args = [_parse_arg(a) for a in getattr(options, "raw_args", [])]
    return run_command(options, action)


def _environments(options: argparse.Namespace) -> int:
    from murano_engine.cli.environments import list_environments
    return list_environments(options)


def _worker(options: argparse.Namespace) -> int:
    from murano_engine.server.worker import serve_worker
    return serve_worker(options)


def _plan(options: argparse.Namespace) -> int:
    from murano_engine.cli.plan import plan_command
    words = take_positionals(options, "plan", ["model"], [options.model] if options.model
                             else [], optional=True)
    options.model = words[0] if words else None
    options.args = [_parse_arg(a) for a in options.raw_args]
    return plan_command(options)


def _plan_parser(commands: Any) -> None:
    from murano_engine.cli.plan import add_parser
    add_parser(commands).set_defaults(handler=_plan)


def _rotate_key(options: argparse.Namespace) -> int:
    """Give an environment a new signing key, or end a rotation (``--end``)."""
    from murano_engine.engine.config import load_config
    from murano_engine.engine.services import project_config, signing_keys
    if not options.environment:
        raise SystemExit("error: rotate-key takes --environment ID")
    config = load_config(options.config_file)
    if options.project:
        config = project_config(config, options.project)
    keys = signing_keys(config)
    if keys is None:
        raise SystemExit("error: environments have no keys of their own here: plans go "
                         "unsigned ([engine] sign_plans) or one key signs them all "
                         "([engine] signing_key)")
    if options.end:
        ended = keys.retire_previous(options.environment)
        print(f"environment {options.environment}: " + (
            "the previous key is forgotten; servers that trust only it refuse plans now"
            if ended else "no rotation was under way"))
        return 0
    if options.environment not in keys.environments():
        raise SystemExit(f"error: environment {options.environment} has no key in "
                         f"{keys.folder}")
    keys.rotate(options.environment)
    print(f"environment {options.environment}: a new key signs its plans; servers booted "
          "before keep taking them (signed with the previous key too) until "
          f"`murano-engine rotate-key --environment {options.environment} --end`")
    return 0


def _validate(options: argparse.Namespace) -> int:
    from murano_engine.cli.test_mocks import mocking_interpreter
    from murano_engine.dsl.validation import package_warnings, validate
    from murano_engine.web.dynamic_ui import package_problems
    options.path, = take_positionals(options, "validate", ["path"],
                                     [options.path] if options.path else [])
    from pathlib import Path
    path = Path(options.path)
    # Required packages are looked up in -l folders and beside the package.
    # The interpreter has the test runner's functions too: a package's tests call them.
    with long_lived():
        problems, warnings = validate(path, mocking_interpreter(),
                                      [Path(d) for d in options.load_packages_from]
                                      + [path.resolve().parent])
        problems += package_problems(path)
    for problem in problems:
        print(problem)
    for warning in package_warnings(path) + warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return 1
    print(f"{options.path}: OK")
    return 0


def _ui_model(options: argparse.Namespace) -> int:
    import json

    from murano_engine.dsl.errors import LoadError
    from murano_engine.dsl.json_loader import load_json
    from murano_engine.engine.config import load_config
    from murano_engine.web.dynamic_ui import UiError, translate
    from murano_engine.web.form_budget import FormLimitError, FormLimits, spending
    if not options.ui or not options.answers:
        raise SystemExit("error: ui-model takes UI_YAML ANSWERS_JSON")
    try:
        text = _read(options.ui)
        raw = sys.stdin.buffer.read() if options.answers == "-" else _read(options.answers)
        answers = load_json(raw, "stdin" if options.answers == "-" else options.answers)
    except OSError as exc:
        raise SystemExit(f"error: {exc}") from None
    except LoadError as exc:
        raise SystemExit(f"error: {exc}") from None
    if not isinstance(answers, dict) or not all(isinstance(v, dict) for v in answers.values()):
        raise SystemExit(f'error: {options.answers}: answers are {{"form": {{"field": '
                         f'value}}}}')
    try:
        with spending(FormLimits.from_config(load_config()).budget()):
            model = translate(text, answers, options.ui, options.name)
    except UiError as exc:
        raise SystemExit(f"error: {exc}") from None
    except FormLimitError as exc:
        raise SystemExit(f"error: {options.ui} met a limit: {exc}") from None
    print(json.dumps(model, indent=2))
    return 0


#: the commands, in the order the help lists them
COMMANDS = ("run", "deploy", "destroy", "action", "environments", "validate", "ui-model",
            "worker", "rotate-key", "plan")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only ``command``'s options (what
    parsing that command needs; the usage line still names every command)."""
    parser = argparse.ArgumentParser(prog="murano-engine", description="Run MuranoPL packages.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks too")
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="show program's version number and exit")
    # ``--debug`` is taken after the command too (set only when given there).
    common = argparse.ArgumentParser(add_help=False, formatter_class=HelpFormatter)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks too")
    only = command in COMMANDS
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_with_parents(common),
        metavar="{" + ",".join(COMMANDS) + "}" if only else None)  # as all of them show
    for name in (command,) if only else COMMANDS:
        _COMMAND_PARSERS[name](commands)
    return parser


def _run_parser(commands: Any) -> None:
    run = commands.add_parser("run", help="run one method and print its result as JSON",
                              usage="%(prog)s CLASS.METHOD [-l DIR ...] [--model FILE] "
                                    "[--arg NAME=JSON ...]")
    run.add_argument("-l", "--load-packages-from", nargs="+", action="extend", default=[],
                     metavar="DIR", help="folders holding packages")
    run.add_argument("target", nargs="?", help="CLASS.METHOD (required)")
    run.add_argument("--model", help="object model (JSON) to load first")
    run.add_argument("--arg", action="append", default=[], metavar="NAME=JSON",
                     help="a keyword argument of the method")
    run.set_defaults(handler=_run)


def _environment_command(commands: Any, name: str, help_text: str,
                         words: str = "") -> argparse.ArgumentParser:
    command = commands.add_parser(
        name, help=help_text,
        usage=f"%(prog)s {words}[-l DIR ...] [--config FILE] [--state FILE]"
              + {"action": " [--arg NAME=JSON ...]",
                 "deploy": " [--report FILE.html]"}.get(name, ""))
    command.add_argument("-l", "--load-packages-from", nargs="+", action="extend",
                         default=[], metavar="DIR",
                         help="folders holding packages (added to those the state file "
                              "remembers)")
    command.add_argument("--config", help="engine configuration (INI); default: the one "
                         "the state file remembers, else the local cloud, RabbitMQ on "
                         "127.0.0.1:5672")
    command.add_argument("--state",
                         help="the environment's state file (default murano-state.json)")
    return command


def _deploy_parser(commands: Any) -> None:
    deploy = _environment_command(commands, "deploy",
                                  "deploy an environment (again) from a model", "MODEL ")
    deploy.add_argument("model", nargs="?",
                        help="object model (JSON; required, except to carry on an "
                             "interrupted deploy with --state alone)")
    deploy.add_argument("--adopt", action="store_true",
                        help="take over an environment the local cloud holds under another, "
                             "missing or unreadable state file: what it made is removed "
                             "first, then the model is deployed afresh")
    deploy.add_argument("--report", metavar="FILE.html",
                        help="write the deployment picture (timeline per server, topology, "
                             "reports) to this self-contained HTML file")
    deploy.set_defaults(handler=lambda o: _environment(o, "deploy"))


def _destroy_parser(commands: Any) -> None:
    destroy = _environment_command(commands, "destroy",
                                   "tear down everything a state file holds")
    destroy.add_argument("--environment", metavar="ID",
                         help="remove everything the local cloud's register names of this "
                              "environment, with no state file or journal")
    destroy.set_defaults(handler=lambda o: _environment(o, "destroy"))


def _action_parser(commands: Any) -> None:
    action = _environment_command(commands, "action",
                                  "run a public method of a deployed object",
                                  "OBJECT_ID METHOD ")
    action.add_argument("object_id", nargs="?", help="the object's id (required)")
    action.add_argument("method", nargs="?", help="the method's name (required)")
    action.add_argument("--arg", action="append", default=[], metavar="NAME=JSON",
                        dest="raw_args", help="a keyword argument of the method")
    action.set_defaults(handler=lambda o: _environment(o, "action"))


def _validate_parser(commands: Any) -> None:
    validate = commands.add_parser("validate", help="check a package and list every problem",
                                   usage="%(prog)s PATH [-l DIR ...]")
    validate.add_argument("path", nargs="?", help="package folder or zip (required)")
    validate.add_argument("-l", "--load-packages-from", nargs="+", action="extend", default=[],
                          metavar="DIR", help="folders holding the packages it requires "
                          "(the package's own folder is searched too)")
    validate.set_defaults(handler=_validate)


def _ui_model_parser(commands: Any) -> None:
    ui_model = commands.add_parser(
        "ui-model", help="the object model a UI definition (ui.yaml) makes from answers",
        usage="%(prog)s UI_YAML ANSWERS_JSON [--name NAME]")
    ui_model.add_argument("ui", nargs="?", help="the UI definition (a package's UI/ui.yaml)")
    ui_model.add_argument("answers", nargs="?",
                          help='answers to its forms (JSON: {"form": {"field": value}}; '
                               '"-" reads them from stdin)')
    ui_model.add_argument("--name", default="", help="the application's name (UI 2.2+)")
    ui_model.set_defaults(handler=_ui_model)


def _rotate_key_parser(commands: Any) -> None:
    rotate = commands.add_parser(
        "rotate-key", help="give an environment a new plan signing key, or end a rotation",
        usage="%(prog)s --environment ID [--project ID] [--config FILE] [--end]")
    rotate.add_argument("--environment", help="the environment's id (required)")
    rotate.add_argument("--project", help="its project, for murano-api's environments")
    rotate.add_argument("--end", action="store_true",
                        help="forget the previous key (once every server was re-made)")
    add_config_option(rotate, "engine or murano-api configuration file")
    rotate.set_defaults(handler=_rotate_key)


def _environments_parser(commands: Any) -> None:
    listing = commands.add_parser(
        "environments", help="list the environments the local cloud holds",
        usage="%(prog)s [--config FILE]")
    listing.add_argument("--config", help="engine configuration (INI); default: the local "
                         "cloud's default state folder")
    listing.set_defaults(handler=_environments)


def _worker_parser(commands: Any) -> None:
    worker = commands.add_parser("worker", help="run engine tasks that murano-api queues",
                                 usage="%(prog)s --config FILE")
    add_config_option(worker, "murano-api configuration file (required)")
    worker.set_defaults(handler=_worker)


_COMMAND_PARSERS: dict[str, Callable[[Any], None]] = {
    "run": _run_parser, "deploy": _deploy_parser, "destroy": _destroy_parser,
    "action": _action_parser, "validate": _validate_parser, "ui-model": _ui_model_parser,
    "worker": _worker_parser, "rotate-key": _rotate_key_parser,
    "environments": _environments_parser, "plan": _plan_parser,
}


def _command_word(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is no option (the options before
    the command take no values); None when the help comes first (it lists them all)."""
    for word in argv:
        if word == "-h" or len(word) > 2 and "--help".startswith(word):
            return None
        if not word.startswith("-"):
            return word
    return None


def add_config_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--config FILE``, as every command spells it; the older ``--config-file``
    still works (hidden from the help)."""
    parser.add_argument("--config", metavar="FILE", dest="config_file", help=help_text)
    parser.add_argument("--config-file", dest="config_file", help=argparse.SUPPRESS)


def _with_parents(*parents: argparse.ArgumentParser) -> type[argparse.ArgumentParser]:
    """A parser class whose instances (the subcommands) share ``parents``' options."""
    class Command(argparse.ArgumentParser):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(parents=list(parents), formatter_class=HelpFormatter, **kwargs)
    return Command


def _as_written(message: str) -> str:
    return message


# argparse puts its own words ("usage: ", "options", its error messages) through
# gettext, and every gettext lookup imports ``locale`` and works out the user's
# languages again: about 0.8 ms of each command's start-up. The commands speak English
# and CPython ships no translation of argparse, so its words are used as written.
argparse._ = _as_written  # type: ignore[attr-defined]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, measuring the terminal as argparse does (through
    ``shutil.get_terminal_size``) without importing shutil: argparse makes a formatter
    for every option it adds, so importing it would cost every command's start-up."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """The columns ``shutil.get_terminal_size()`` reports: ``COLUMNS``, else standard
    output's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _VersionAction(argparse.Action):
    """``--version``: the release this code is (``murano_engine.__version__``, which
    setup.py installs under; looking up the installed metadata costs 40 ms)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"{parser.prog} {murano_engine.__version__}")
        parser.exit()


def take_positionals(options: argparse.Namespace, command: str, names: list[str],
                     given: list[str], optional: bool = False) -> list[str]:
    """The command's positional words, whether they came before or after ``-l DIR...``.

    A word ``-l`` swallowed that is no folder is a positional (``-l DIR CLASS.METHOD``);
    where that makes one word too many, or a ``-l`` folder does not exist, the error
    names the folder. Exits with a usage error otherwise (no words at all are fine
    when ``optional``).
    """
    load_dirs = options.load_packages_from
    moved = split_load_dirs(load_dirs, [])
    words = moved + given
    if len(words) > len(names):
        for word in moved:
            if not os.path.exists(word):
                raise SystemExit(f"error: {word}: package folder does not exist")
    for folder in load_dirs:
        if not os.path.exists(folder):
            raise SystemExit(f"error: {folder}: package folder does not exist")
    if len(words) != len(names) and not (optional and not words):
        wanted = " ".join(n.upper() for n in names) if names else "no positional arguments"
        raise SystemExit(f"error: {command} takes {wanted}")
    return words


def _read(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def split_load_dirs(load_dirs: list[str], positional: list[str]) -> list[str]:
    """Move words that ``-l DIR...`` swallowed but are no folders back to the positionals.

    ``-l`` takes several folders, so ``-l DIR CLASS.METHOD`` would otherwise
    read the target as a folder.
    """
    while load_dirs and not os.path.isdir(load_dirs[-1]) and "/" not in load_dirs[-1] \
            and os.sep not in load_dirs[-1]:  # a missing folder stays one, to be reported
        positional.insert(0, load_dirs.pop())
    return positional


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from murano_engine.early_stop import JOURNALED, keep_stops
    if _command_word(argv) in JOURNALED:
        keep_stops()
    options = build_parser(_command_word(argv)).parse_args(argv)
    if options.command == "run":
        options.target, = take_positionals(options, "run", ["class.method"],
                                           [options.target] if options.target else [])
    return run_guarded(lambda: options.handler(options), debug=options.debug)


if __name__ == "__main__":
    console()
