"""The WSGI application: routes of Murano's API v1, request logs and JSON errors."""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

import murano_engine
from murano_common.jsontext import nesting_depth
from murano_engine.api import catalog, environments, previews, schemas, templates
from murano_engine.api.auth import Context
from murano_engine.api.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    TooLarge,
    Unavailable,
    render,
)
from murano_engine.api.storable import NUL, nul_at, storable, surrogate_at
from murano_engine.backend.db import Store
from murano_engine.backend.settings import Settings
from murano_engine.dsl import errors as dsl_errors
from murano_engine.engine.interpreter import build_interpreter

LOG = logging.getLogger("murano_engine.api.requests")
JSON_LIMIT = 16 * 1024 * 1024
JSON_DEPTH = 100
SESSION_HEADER = "X-Configuration-Session"

class Route(NamedTuple):
    """One route; the OpenAPI document is built from the table of them."""

    path: str
    methods: tuple[str, ...]
    endpoint: str
    summary: str
    body: str | None = None  # the schema (in schemas/requests.json) its JSON body follows
    media: str = "application/json"


ROUTES: list[Route] = [
    Route("/", ("GET",), "versions", "API versions"),
    Route("/v1/openapi.json", ("GET",), "openapi", "This OpenAPI document"),
    Route("/v1/environments", ("GET",), "list_envs", "List the project's environments"),
    Route("/v1/environments", ("POST",), "create_env", "Create an environment", "Environment"),
    Route("/v1/environments/<env_id>", ("GET",), "show_env",
          "Show an environment and its services"),
    Route("/v1/environments/<env_id>", ("PUT",), "rename_env", "Rename an environment", "Named"),
    Route("/v1/environments/<env_id>", ("DELETE",), "delete_env",
          "Delete an environment (through the engine; ?abandon=true drops it)"),
    Route("/v1/environments/<env_id>/lastStatus", ("GET",), "last_status",
          "Latest status report of each service"),
    Route("/v1/environments/<env_id>/model/", ("GET",), "get_model", "The object model"),
    Route("/v1/environments/<env_id>/model/<path:path>", ("GET",), "get_model",
          "Part of the object model"),
    Route("/v1/environments/<env_id>/model/", ("PATCH",), "patch_model",
          "JSON-patch the session's object model", "ModelPatch"),
    Route("/v1/environments/<env_id>/configure", ("POST",), "configure",
          "Open a configuration session"),
    Route("/v1/environments/<env_id>/sessions/<session_id>", ("GET",), "show_session",
          "Show a session"),
    Route("/v1/environments/<env_id>/sessions/<session_id>", ("DELETE",), "delete_session",
          "Discard a session"),
    Route("/v1/environments/<env_id>/sessions/<session_id>/deploy", ("POST",), "deploy",
          "Deploy a session"),
    Route("/v1/environments/<env_id>/sessions/<session_id>/preview", ("POST",), "preview",
          "What deploying a session would do: its plan (nothing is made, changed or sent)"),
    Route("/v1/environments/<env_id>/services", ("GET", "DELETE"), "services",
          "Read the services"),
    Route("/v1/environments/<env_id>/services", ("POST",), "services",
          "Add services (needs X-Configuration-Session)", "ServiceOrServices"),
    Route("/v1/environments/<env_id>/services", ("PUT",), "services",
          "Replace the services (needs X-Configuration-Session)", "Services"),
    Route("/v1/environments/<env_id>/services/<path:path>", ("GET", "POST", "PUT", "DELETE"),
          "services", "Read or edit part of the services (writes need X-Configuration-Session)"),
    Route("/v1/environments/<env_id>/deployments", ("GET",), "list_deployments",
          "Deployments of an environment"),
    Route("/v1/environments/<env_id>/deployments/<task_id>", ("GET",), "reports",
          "Status reports of a deployment (?service_id= filters)"),
    Route("/v1/deployments", ("GET",), "all_deployments", "Deployments of all environments"),
    Route("/v1/environments/<env_id>/actions/<action_id>", ("POST",), "call_action",
          "Run an object's action", "ActionArguments"),
    Route("/v1/environments/<env_id>/actions/<action_id>", ("GET",), "action_result",
          "Result of an action's task"),
    Route("/v1/actions", ("POST",), "static_action", "Call a public static method",
          "StaticAction"),
    Route("/v1/schemas/<class_name>", ("GET",), "class_schema",
          "JSON schema of a class's input properties (?classVersion=, ?packageName=)"),
    Route("/v1/schemas/<class_name>/<method_names>", ("GET",), "class_schema",
          "JSON schemas of a class's input properties and of the methods' arguments "
          "(comma separated)"),
    Route("/v1/catalog/packages", ("GET",), "list_packages", "Search the catalog"),
    Route("/v1/catalog/packages", ("POST",), "upload_package",
          "Upload a package (multipart: the zip and __metadata__ JSON)", "PackageUpload",
          "multipart/form-data"),
    Route("/v1/catalog/packages/<package_id>", ("GET",), "show_package", "Show a package"),
    Route("/v1/catalog/packages/<package_id>", ("PATCH",), "update_package",
          "Update tags, categories, is_public, enabled, name or description", "PackagePatch"),
    Route("/v1/catalog/packages/<package_id>", ("DELETE",), "delete_package",
          "Delete a package"),
    Route("/v1/catalog/packages/<package_id>/download", ("GET",), "download",
          "The package's zip"),
    Route("/v1/catalog/packages/<package_id>/ui", ("GET",), "ui", "The UI definition"),
    Route("/v1/catalog/packages/<package_id>/ui/model", ("POST",), "ui_model",
          "The object model the UI definition makes from answers to its forms", "UiAnswers"),
    Route("/v1/catalog/packages/<package_id>/logo", ("GET",), "logo", "The logo"),
    Route("/v1/catalog/packages/<package_id>/supplier_logo", ("GET",), "supplier_logo",
          "The supplier's logo"),
    Route("/v1/catalog/categories", ("GET",), "list_categories", "List categories"),
    Route("/v1/catalog/categories", ("POST",), "create_category", "Create a category",
          "Category"),
    Route("/v1/catalog/categories/<category_id>", ("GET",), "show_category",
          "Show a category and its packages"),
    Route("/v1/catalog/categories/<category_id>", ("DELETE",), "delete_category",
          "Delete an unused category"),
    Route("/v1/templates", ("GET",), "list_templates", "List environment templates"),
    Route("/v1/templates", ("POST",), "create_template", "Create an environment template",
          "Template"),
    Route("/v1/templates/<template_id>", ("GET",), "show_template", "Show a template"),
    Route("/v1/templates/<template_id>", ("PUT",), "update_template", "Update a template",
          "TemplateChanges"),
    Route("/v1/templates/<template_id>", ("DELETE",), "delete_template", "Delete a template"),
    Route("/v1/templates/<template_id>/create-environment", ("POST",), "template_env",
          "Create an environment (and session) from a template", "Environment"),
    Route("/v1/templates/<template_id>/clone", ("POST",), "clone_template",
          "Copy a template into the caller's project", "Named"),
    Route("/v1/templates/<template_id>/services", ("GET",), "template_services",
          "List a template's applications"),
    Route("/v1/templates/<template_id>/services", ("POST",), "template_services",
          "Add applications to a template", "ServiceOrServices"),
    Route("/v1/templates/<template_id>/services/<path:path>", ("GET", "DELETE"),
          "template_services", "Show or remove a template's application"),
    Route("/v1/templates/<template_id>/services/<path:path>", ("PUT",), "template_services",
          "Replace a template's application", "Service"),
]
PUBLIC = {"versions", "openapi"}


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 description of every route; request bodies refer to ``schemas.SCHEMAS``."""
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        name = route.path.replace("<path:path>", "{path}")
        params = []
        while "<" in name:
            start, end = name.index("<"), name.index(">")
            params.append(name[start + 1:end])
            name = name[:start] + "{" + name[start + 1:end] + "}" + name[end + 1:]
        params += ["path"] if "{path}" in name else []
        # One endpoint may serve several paths: the longer ones name their last parameter.
        operation_id = route.endpoint + (f"_{params[-1]}" if params and any(
            r.endpoint == route.endpoint and len(r.path) < len(route.path)
            for r in ROUTES) else "")
        for method in route.methods:
            operation: dict[str, Any] = {
                "operationId": f"{operation_id}_{method.lower()}", "summary": route.summary,
                "parameters": [{"name": p, "in": "path", "required": True,
                                "schema": {"type": "string"}} for p in params],
                "security": [] if route.endpoint in PUBLIC else [{"token": []}],
                "responses": {"200": {"description": "success"},
                              "default": {"description": "an error in Murano's shape"}}}
            if route.body:
                operation["requestBody"] = {
                    "required": not schemas.accepts(route.body, None),
                    "content": {route.media: {"schema": {
                        "$ref": f"#/components/schemas/{route.body}"}}}}
            paths.setdefault(name, {})[method.lower()] = operation
    return {"openapi": "3.1.0",
            "info": {"title": "Murano application catalog API", "version": "1.0"},
            "components": {"securitySchemes": {"token": {"type": "apiKey", "in": "header",
                                                         "name": "X-Auth-Token"}},
                           "schemas": schemas.SCHEMAS},
            "paths": paths}


def logged(text: str) -> str:
    """``text`` as the request log writes it: a character that is not printable (a line
    break a client put in its path to forge a log line, a NUL) as ``\\xNN``."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def load_json(data: bytes, what: str) -> Any:
    """Parse a JSON request text; too deep or invalid is a :class:`BadRequest`."""
    depth = nesting_depth(data)
    if depth > JSON_DEPTH:
        raise BadRequest(f"{what} nests {depth} levels deep; JSON here has at most "
                         f"{JSON_DEPTH}")
    try:
        value = json.loads(data, parse_constant=_not_a_number, parse_float=_finite)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc}") from None
    where = nul_at(value) if b"\\u0000" in data else None  # JSON's only way to write a NUL
    if where is not None:
        raise BadRequest(f"{what} has a NUL character (\\u0000) at {where}; no text here "
                         f"can hold one")
    # a lone surrogate can only be written as an escape (in UTF-8 it is invalid)
    where = surrogate_at(value) if b"\\u" in data.lower() else None
    if where is not None:
        raise BadRequest(f"{what} has a lone UTF-16 surrogate at {where}; no text here can "
                         f"hold one")
    return value


def _not_a_number(name: str) -> Any:
    """JSON has no NaN nor Infinity (Python's json reads them, no database keeps them)."""
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if number in (math.inf, -math.inf):
        raise ValueError(f"{text} is too large a number")
    return number


def _check_nul(path: str, request: ApiRequest) -> None:
    """No id, name or query holds a NUL character: refused before any lookup."""
    if NUL in path:
        raise NotFound("the path has a NUL character (%00); no resource has one")
    for key, value in request.args.items(multi=True):
        if NUL in key or NUL in value:
            raise BadRequest(f"the query parameter {storable(key)!r} has a NUL character "
                             f"(%00); no text here can hold one")


def server_roots(settings: Settings) -> list[str]:
    """Folders of this server whose paths never go out in a response, longest first."""
    folders = {Path(murano_engine.__file__).parent.parent, settings.packages_cache,
               Path(sys.prefix), Path(sys.base_prefix), Path(tempfile.gettempdir()), Path.home()}
    if settings.config_file is not None:
        folders.add(settings.config_file.parent)
    roots = {str(f.resolve()) + "/" for f in folders} | {str(f) + "/" for f in folders}
    return sorted((r for r in roots if r != "//"), key=len, reverse=True)


class ApiRequest(Request):
    """A request and the schema its JSON body follows (its route's ``body``)."""

    body_schema: str | None = None


def json_response(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


class Pages(Protocol):
    """What the API serves of the web pages (:mod:`murano_engine.web`) when they are
    mounted: every ``/ui/`` page, and the form engine behind ``ui/model``."""

    def respond(self, request: Request) -> Response:
        """The page for a request under ``/ui/``."""

    def ui_model(self, ctx: Context, package: dict[str, Any], ui_definition: bytes,
                 answers: Any, name: str) -> Any:
        """The object model a package's ui.yaml makes of a form's answers (raises
        :class:`BadRequest` for answers or a form that do not hold)."""

    def ui_problems(self, text: bytes, filename: str) -> list[str]:
        """The problems of a package's UI definition (``text``, shown as ``filename``)."""


class Api:
    """The application; one instance serves every thread. The web pages are mounted
    on it afterwards (``web``), by :mod:`murano_engine.server.main`."""

    def __init__(self, settings: Settings, store: Store, dispatcher: Any,
                 identify: Callable[[dict[str, Any]], Context]) -> None:
        self.settings = settings
        self.store = store
        self.dispatcher = dispatcher
        self.identify = identify
        self.interpreter = build_interpreter()
        self.interpreter.warm()
        # Repeated slashes are merged before matching, not redirected: clients ask for
        # ``/model//services/0`` (a model path with its leading slash).
        self.url_map = Map([Rule(r.path, methods=r.methods, endpoint=r) for r in ROUTES],
                           strict_slashes=False, merge_slashes=False)
        self.openapi = json.dumps(openapi_document()).encode()
        self.server_roots = server_roots(settings)
        self.web: Pages | None = None  # mounted by murano_engine.server.main

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        started = time.perf_counter()
        request = ApiRequest(environ)
        request_id = f"req-{uuid.uuid4()}"
        try:
            path = re.sub("/{2,}", "/", environ.get("PATH_INFO") or "/")
            _check_nul(path, request)
            if self.web is not None and (path == "/ui" or path.startswith("/ui/")):
                response = self.web.respond(request)
            else:
                response = self.dispatch(request, environ, path)
        except ApiError as exc:
            response = self.error(request, exc, request_id)
        except RequestEntityTooLarge:
            response = self.error(request, TooLarge("the request body is too large"), request_id)
        except HTTPException as exc:
            response = self.error(request, ApiError(exc.description or exc.name,
                                                    status=exc.code or 500), request_id)
        except IntegrityError:  # a row a concurrent request made (or removed) first
            LOG.info("%s %s %s conflicted", request_id, request.method,
                     logged(request.path), exc_info=True)
            response = self.error(request, Conflict(
                "the request conflicts with a change made at the same time; try again"),
                request_id)
        except (OperationalError, InterfaceError) as exc:  # the database does not answer
            LOG.warning("%s %s %s: the database does not answer: %s", request_id,
                        request.method, logged(request.path), exc)
            response = self.error(request, Unavailable(
                "the database does not answer; try again later"), request_id)
        except Exception:  # noqa: BLE001 - one bad request must not stop the API
            LOG.exception("%s %s %s failed", request_id, request.method,
                          logged(request.path))
            response = self.error(request, ApiError(
                f"internal error; the API log has its details under request id {request_id}"),
                request_id)
        response.headers["x-openstack-request-id"] = request_id
        if LOG.isEnabledFor(logging.INFO):  # the request line is not built for nothing
            LOG.info("%s %s %s %d %.1fms", request_id, request.method,
                     logged(request.full_path.rstrip("?")), response.status_code,
                     (time.perf_counter() - started) * 1000)
        return response(environ, start_response)

    def dispatch(self, request: ApiRequest, environ: dict, path: str) -> Response:
        """The response of the route ``path`` matches. A read made on a pooled connection
        the database server dropped (it restarted, or ended its connections) is made
        again once on a new one: the first request after an outage then succeeds."""
        route, args = self.url_map.bind_to_environ(environ).match(path)
        request.body_schema = route.body
        context = None if route.endpoint in PUBLIC else self.identify(environ)
        handler = getattr(self, "on_" + route.endpoint)
        try:
            return handler(request, context, **args)
        except DBAPIError as exc:
            if not exc.connection_invalidated or request.method not in ("GET", "HEAD"):
                raise
            LOG.info("%s %s: a pooled connection was gone (%s); asked again",
                     request.method, logged(request.path), exc.orig)
            return handler(request, context, **args)

    def error(self, request: ApiRequest, exc: ApiError, request_id: str) -> Response:
        """The error's response; server paths in its text become relative ones."""
        exc.message = self.hide_paths(exc.message)
        exc.problems = exc.problems and [self.hide_paths(p) for p in exc.problems]
        content_type, body = render(exc, request.headers.get("Accept"), request_id,
                                    request.headers.get("User-Agent"))
        return Response(body, status=exc.status, content_type=content_type)

    def hide_paths(self, text: str) -> str:
        for root in self.server_roots:
            text = text.replace(root, "")
        return text

    def hidden(self, value: Any) -> Any:
        """``value`` (a task's result, as JSON data) with server paths hidden in its texts:
        a MuranoPL stack names the files of the core library and the package cache."""
        if isinstance(value, str):
            return self.hide_paths(value)
        if isinstance(value, dict):
            return {key: self.hidden(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.hidden(item) for item in value]
        return value

    # -- helpers -------------------------------------------------------------
    @staticmethod
    def body(request: ApiRequest, required: bool = True) -> Any:
        """The JSON body, valid against the route's schema (None if optional and empty)."""
        if request.content_length and request.content_length > JSON_LIMIT:
            raise TooLarge(f"a JSON body has at most {JSON_LIMIT} bytes")
        data = request.get_data(cache=False)
        if not data.strip():
            if required:
                raise BadRequest("the request needs a JSON body")
            return None
        value = load_json(data, "the body")
        if request.body_schema:
            schemas.check(request.body_schema, value)
        return value

    @staticmethod
    def params(request: ApiRequest) -> dict[str, list[str]]:
        return {k: request.args.getlist(k) for k in request.args}

    def submit(self, task: dict | None) -> None:
        if task is not None:
            self.dispatcher.submit(task)

    # -- versions ----------------------------------------------------------
    def on_versions(self, request: ApiRequest, _: None) -> Response:
        return json_response({"versions": [{"id": "v1.0", "status": "CURRENT", "links": [
            {"rel": "self", "href": request.host_url + "v1/"}]}]}, 300)

    def on_openapi(self, request: ApiRequest, _: None) -> Response:
        return Response(self.openapi, mimetype="application/json")

    # -- environments ------------------------------------------------------
    def on_list_envs(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(environments.list_envs(self.store, ctx, self.params(request)))

    def on_create_env(self, request: ApiRequest, ctx: Context) -> Response:
        env = environments.create_env(self.store, ctx, self.body(request),
                                      self.settings.environment_class)
        return json_response(environments.env_json(env, "ready"))

    def on_show_env(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(environments.show_env(self.store, ctx, env_id,
                                                   request.headers.get(SESSION_HEADER)))

    def on_rename_env(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(environments.rename_env(self.store, ctx, env_id,
                                                     self.body(request)))

    def on_delete_env(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        abandon = request.args.get("abandon", "false").lower() == "true"
        self.submit(environments.delete_env(self.store, ctx, env_id, abandon))
        return Response(status=200)

    def on_last_status(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(environments.last_status(self.store, ctx, env_id,
                                                      request.headers.get(SESSION_HEADER)))

    def on_get_model(self, request: ApiRequest, ctx: Context, env_id: str,
                     path: str = "") -> Response:
        return json_response(environments.get_model(self.store, ctx, env_id, path,
                                                     request.headers.get(SESSION_HEADER)))

    def on_patch_model(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(environments.patch_model(
            self.store, ctx, env_id, request.headers.get(SESSION_HEADER), self.body(request)))

    # -- sessions ----------------------------------------------------------
    def on_configure(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(environments.configure(self.store, ctx, env_id))

    def on_show_session(self, request: ApiRequest, ctx: Context, env_id: str,
                        session_id: str) -> Response:
        return json_response(environments.show_session(self.store, ctx, env_id, session_id))

    def on_delete_session(self, request: ApiRequest, ctx: Context, env_id: str,
                          session_id: str) -> Response:
        environments.delete_session(self.store, ctx, env_id, session_id)
        return Response(status=200)

    def on_deploy(self, request: ApiRequest, ctx: Context, env_id: str,
                  session_id: str) -> Response:
        self.submit(environments.deploy(self.store, ctx, env_id, session_id))
        return Response(status=200)

    def on_preview(self, request: ApiRequest, ctx: Context, env_id: str,
                   session_id: str) -> Response:
        task = previews.preview_task(self.store, ctx, env_id, session_id)
        return json_response(self.hidden(self.dispatcher.preview(ctx, task)))

    # -- services ----------------------------------------------------------
    def on_services(self, request: ApiRequest, ctx: Context, env_id: str,
                    path: str = "") -> Response:
        session_id = request.headers.get(SESSION_HEADER)
        if request.method == "GET":
            return json_response(environments.get_services(self.store, ctx, env_id, path,
                                                           session_id))
        value = self.body(request) if request.method != "DELETE" else None
        result = environments.edit_services(self.store, ctx, env_id, session_id,
                                            request.method, path, value)
        return json_response(result) if result is not None else Response(status=200)

    # -- deployments and actions -------------------------------------------
    def on_list_deployments(self, request: ApiRequest, ctx: Context, env_id: str) -> Response:
        return json_response(self.hidden(environments.list_deployments(self.store, ctx,
                                                                         env_id)))

    def on_all_deployments(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(self.hidden(environments.list_deployments(self.store, ctx,
                                                                         None)))

    def on_reports(self, request: ApiRequest, ctx: Context, env_id: str, task_id: str) -> Response:
        return json_response(self.hidden(environments.reports(
            self.store, ctx, env_id, task_id, request.args.getlist("service_id"))))

    def on_call_action(self, request: ApiRequest, ctx: Context, env_id: str,
                       action_id: str) -> Response:
        task = environments.call_action(self.store, ctx, env_id, action_id,
                                        self.body(request, required=False) or {})
        self.submit(task)
        return json_response({"task_id": task["task_id"]})

    def on_action_result(self, request: ApiRequest, ctx: Context, env_id: str,
                         action_id: str) -> Response:
        return json_response(self.hidden(environments.action_result(self.store, ctx, env_id,
                                                                      action_id)))

    def on_static_action(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(self.dispatcher.call_static(ctx, self.body(request)))

    def on_class_schema(self, request: ApiRequest, ctx: Context, class_name: str,
                        method_names: str = "") -> Response:
        from murano_engine.api.class_schema import class_schema
        from murano_engine.backend.package_loader import CatalogLoader
        params = request.args
        loader = CatalogLoader(self.store, self.settings.packages_cache, ctx.project_id,
                               self.interpreter)
        try:
            if params.get("packageName"):
                package = loader.find_package(str(params["packageName"]),
                                              str(params.get("classVersion") or "=0"))
                cls = package.find_class(class_name)
            else:
                cls = loader.find_class(class_name)
            names = [n for n in method_names.split(",") if n]
            return json_response(class_schema(cls, names))
        except (dsl_errors.NoClassFound, dsl_errors.NoPackageFound) as exc:
            raise NotFound(str(exc)) from None
        except KeyError as exc:
            raise NotFound(str(exc.args[0])) from None

    # -- catalog -----------------------------------------------------------
    def on_list_packages(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(catalog.list_packages(self.store, self.settings, ctx,
                                                   self.params(request)))

    def on_upload_package(self, request: ApiRequest, ctx: Context) -> Response:
        limit = self.settings.package_size_limit
        if request.content_length and request.content_length > limit + 1024 * 1024:
            raise TooLarge(f"the upload is {request.content_length} bytes; packages have at "
                           f"most {limit} bytes")
        request.max_content_length = limit + 1024 * 1024
        request.max_form_memory_size = 1024 * 1024
        if request.mimetype != "multipart/form-data":
            raise BadRequest("upload the package as multipart/form-data")
        files = list(request.files.values())
        if len(files) != 1:
            raise BadRequest("the upload needs exactly one package file")
        data = files[0].read(limit + 1)
        metadata: Any = {}
        if request.form.get("__metadata__"):
            metadata = load_json(request.form["__metadata__"].encode(), "__metadata__")
            schemas.check("PackageMetadata", metadata, "__metadata__")
        return json_response(catalog.create_package(
            self.store, self.settings, self.interpreter, ctx, data, metadata,
            self.web.ui_problems if self.web is not None else None))

    def on_show_package(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        return json_response(catalog.show_package(self.store, ctx, package_id))

    def on_update_package(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        return json_response(catalog.update_package(self.store, ctx, package_id,
                                                    self.body(request)))

    def on_delete_package(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        catalog.delete_package(self.store, ctx, package_id)
        return Response(status=200)

    def on_download(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        data = catalog.package_blob(self.store, ctx, package_id, "archive")
        return Response(data, mimetype="application/octet-stream", headers={
            "Content-Disposition": f"attachment; filename={package_id}.zip"})

    def on_ui(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        return Response(catalog.package_blob(self.store, ctx, package_id, "ui_definition"),
                        mimetype="text/plain")

    def on_ui_model(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        if self.web is None:
            raise NotFound("this API serves no forms (the web pages are not mounted)")
        body = self.body(request)
        package = catalog.show_package(self.store, ctx, package_id)
        text = catalog.package_blob(self.store, ctx, package_id, "ui_definition")
        return json_response(self.web.ui_model(ctx, package, text, body["answers"],
                                               body.get("name") or package["name"]))

    def on_logo(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        return Response(catalog.package_blob(self.store, ctx, package_id, "logo"),
                        mimetype="application/octet-stream")

    def on_supplier_logo(self, request: ApiRequest, ctx: Context, package_id: str) -> Response:
        return Response(catalog.package_blob(self.store, ctx, package_id, "supplier_logo"),
                        mimetype="application/octet-stream")

    def on_list_categories(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(catalog.list_categories(self.store, self.settings, ctx,
                                                     self.params(request)))

    def on_create_category(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(catalog.create_category(self.store, ctx, self.body(request)))

    def on_show_category(self, request: ApiRequest, ctx: Context, category_id: str) -> Response:
        return json_response(catalog.show_category(self.store, ctx, category_id))

    def on_delete_category(self, request: ApiRequest, ctx: Context, category_id: str) -> Response:
        catalog.delete_category(self.store, ctx, category_id)
        return Response(status=200)

    # -- templates ---------------------------------------------------------
    def on_list_templates(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(templates.list_templates(self.store, ctx, self.params(request)))

    def on_create_template(self, request: ApiRequest, ctx: Context) -> Response:
        return json_response(templates.create_template(self.store, ctx, self.body(request)))

    def on_show_template(self, request: ApiRequest, ctx: Context, template_id: str) -> Response:
        return json_response(templates.show_template(self.store, ctx, template_id))

    def on_update_template(self, request: ApiRequest, ctx: Context, template_id: str) -> Response:
        return json_response(templates.update_template(self.store, ctx, template_id,
                                                       self.body(request)))

    def on_delete_template(self, request: ApiRequest, ctx: Context, template_id: str) -> Response:
        templates.delete_template(self.store, ctx, template_id)
        return Response(status=200)

    def on_template_env(self, request: ApiRequest, ctx: Context, template_id: str) -> Response:
        return json_response(templates.create_environment(
            self.store, ctx, template_id, self.body(request), self.settings.environment_class))

    def on_clone_template(self, request: ApiRequest, ctx: Context, template_id: str) -> Response:
        return json_response(templates.clone_template(self.store, ctx, template_id,
                                                      self.body(request)))

    def on_template_services(self, request: ApiRequest, ctx: Context, template_id: str,
                             path: str = "") -> Response:
        if request.method == "GET":
            return json_response(templates.template_services(self.store, ctx, template_id,
                                                             path))
        value = self.body(request) if request.method != "DELETE" else None
        result = templates.edit_template_services(self.store, ctx, template_id,
                                                  request.method, path, value)
        return json_response(result) if result is not None else Response(status=200)
