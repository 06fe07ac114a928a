"""One workload through the original Murano engine, in Murano's own virtualenv.

``benchmarks/murano_side_by_side.py`` runs this file with the Python of a
Murano source tree's virtualenv (never this project's); it imports only
Murano's modules. Each mode is what Murano does for that job:

* ``run``: load the packages of ``-l`` folders, make an object of a class and
  call a method (what ``murano-test-runner`` does for one test), print the
  result as JSON;
* ``test``: ``murano-test-runner`` itself over a package; Keystone, which it
  asks for a token before anything else, is replaced by a stand-in that
  hands one out (no test touches it);
* ``load``: index every package under the ``-l`` folders and load each of
  their classes (parse, build, compile), as the engine does on first use;
  print how many loaded and which did not;
* ``model``: deserialize an environment model (``Objects``) and serialize it
  back, as every deployment does, print the number of objects.
"""

import argparse
import json
import sys


def _configure(folders):
    from murano.common import config
    from oslo_config import cfg
    config.parse_args(args=[], default_config_files=[])
    cfg.CONF.set_override("load_packages_from", folders, group="engine")


def _loader_and_executor(folders):
    _configure(folders)  # Murano's modules read options as they are imported
    from murano.common import engine
    from murano.dsl import executor
    from murano.engine import execution_session, mock_context_manager, package_loader
    session = execution_session.ExecutionSession()
    loader = package_loader.CombinedPackageLoader(session)
    engine.get_plugin_loader().register_in_loader(loader)
    dsl_executor = executor.MuranoDslExecutor(
        loader, mock_context_manager.MockContextManager(), session)
    return loader, dsl_executor, session


def _find_class(loader, name):
    from murano.dsl import helpers
    package = loader.load_class_package(name, helpers.parse_version_spec("*"))
    return package.find_class(name, False)


def run(folders, target, kwargs):
    loader, dsl_executor, session = _loader_and_executor(folders)
    class_name, method = target.rsplit(".", 1)
    cls = _find_class(loader, class_name)
    obj = dsl_executor.object_store.load({}, None, default_type=cls)
    cls.methods[method].usage = "Action"
    session.start()
    result = dsl_executor.run(cls, method, obj, (), kwargs)
    session.finish()
    print(json.dumps(result))
    dsl_executor.finalize()


def test(folders, package):
    from keystoneclient.v3 import client

    class TokenOnly:
        def __init__(self, **_):
            self.auth_token = "benchmark"
            self.project_id = "benchmark"

    client.Client = TokenOnly
    from murano.cmd import test_runner
    sys.argv = ["murano-test-runner", "--os-auth-url", "http://127.0.0.1:9/v3",
                "--os-username", "bench", "--os-password", "bench",
                "--os-project-name", "bench", "-l", *folders, "--", package]
    test_runner.main()


def load(folders):
    loader, _executor, _session = _loader_and_executor(folders)
    loaded, failed = 0, []
    for directory in loader.directory_loaders:
        for package in directory.packages:
            for name in package.classes:
                try:
                    package.find_class(name, False)
                    loaded += 1
                except Exception:  # a broken class: counted, as a validation reports it
                    failed.append(name)
    print(json.dumps({"loaded": loaded, "failed": sorted(failed)}))


def model(folders, path):
    _loader, dsl_executor, _session = _loader_and_executor(folders)
    from murano.dsl import serializer
    with open(path) as stream:
        data = json.load(stream)
    root = dsl_executor.load(data)
    dumped = serializer.serialize_model(root.object, dsl_executor)
    print(len(json.dumps(dumped)))
    dsl_executor.finalize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "test", "load", "model"])
    parser.add_argument("-l", dest="folders", action="append", default=[])
    parser.add_argument("target", nargs="?")
    parser.add_argument("--kwargs", default="{}")
    options = parser.parse_intermixed_args()
    if options.mode == "run":
        run(options.folders, options.target, json.loads(options.kwargs))
    elif options.mode == "test":
        test(options.folders, options.target)
    elif options.mode == "load":
        load(options.folders)
    else:
        model(options.folders, options.target)


if __name__ == "__main__":
    main()
