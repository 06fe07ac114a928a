"""``murano-agent --config-file FILE``: run the agent in the foreground."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from murano_agent.config import AgentConfig, ConfigError, load_config
from murano_agent.service import AgentService

LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def setup_logging(cfg: AgentConfig) -> None:
    """Log to stdout and, when ``log_file`` is set, to that file too."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout)]
    if cfg.log_file:
        Path(cfg.log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(cfg.log_file, encoding="utf-8"))
    logging.basicConfig(
        level=logging.DEBUG if cfg.debug else logging.INFO,
        format=LOG_FORMAT,
        handlers=handlers,
        force=True,
    )
    logging.getLogger("amqp").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``murano-agent`` console script."""
    parser = argparse.ArgumentParser(
        prog="murano-agent",
        description="Run the guest agent in the foreground: take execution plans from "
                    "RabbitMQ, run them and send their results back.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config-file", help="agent INI file (default /etc/murano/agent.conf)")
    source.add_argument("--config-dir", help="folder holding agent.conf (Murano's usual flag)")
    parser.add_argument(
        "--enable_dynamic_result_queue",
        action="store_true",
        help="send each result to the plan's ReplyTo queue when it has one",
    )
    args = parser.parse_args(argv)
    path = args.config_file or str(Path(args.config_dir or "/etc/murano") / "agent.conf")
    overrides = {"enable_dynamic_result_queue": "true"} if args.enable_dynamic_result_queue else {}
    try:
        cfg = load_config(Path(path), overrides)
        setup_logging(cfg)
        service = AgentService(cfg)
    except ConfigError as exc:
        print(exc.lines("murano-agent: "), file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"murano-agent: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: service.stop(timeout=0))
    service.start()
    try:
        service.wait()
    except KeyboardInterrupt:
        service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
