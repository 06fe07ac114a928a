"""The pages murano-api serves under ``/ui/``: catalog, package, environments, the
add-application wizard (from the package's ``UI/ui.yaml``), deploy and watch.

The pages call the same functions as the v1 API, as the caller a token names:
the login form keeps the token in a same-site cookie, and each request is
identified with it as if it came in ``X-Auth-Token``. The environment page asks
``/ui/environments/<id>/live`` for the status, the reports and the picture every
second while a deployment runs.
"""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
import time
import zipfile
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any
from urllib.parse import quote as url_quote

import jinja2
import yaml
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.utils import redirect
from werkzeug.wrappers import Request, Response

from murano_engine.api import catalog, environments
from murano_engine.api.auth import Context
from murano_engine.api.errors import ApiError, BadRequest, Conflict
from murano_engine.api.storable import NUL
from murano_engine.web import actions, dynamic_ui, guard, outputs, picture, words
from murano_engine.web.choices import for_cloud
from murano_engine.web.form_budget import FormLimits
from murano_engine.web.form_pool import FormPool
from murano_engine.web.images import image_type

COOKIE = "murano_token"
SESSION_COOKIE = "murano_session_"
#: the pages' own scripts and style sheets (``/ui/static/<name>``)
STATIC = resources.files("murano_engine.web") / "static"
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript"}

#: (path, endpoint, methods) of each page
RULES: list[tuple[str, str, tuple[str, ...]]] = [
    ("/ui/", "catalog", ("GET",)),
    ("/ui/login", "login", ("GET", "POST")),
    ("/ui/static/<name>", "static", ("GET",)),
    ("/ui/logout", "logout", ("POST",)),
    ("/ui/packages", "upload", ("POST",)),
    ("/ui/packages/<package_id>", "package", ("GET",)),
    ("/ui/packages/<package_id>/logo", "logo", ("GET",)),
    ("/ui/packages/<package_id>/delete", "delete_package", ("POST",)),
    ("/ui/environments", "environments", ("GET", "POST")),
    ("/ui/environments/<env_id>", "environment", ("GET",)),
    ("/ui/environments/<env_id>/live", "live", ("GET",)),
    ("/ui/environments/<env_id>/deploy", "deploy", ("POST",)),
    ("/ui/environments/<env_id>/preview", "preview", ("GET",)),
    ("/ui/environments/<env_id>/discard", "discard", ("POST",)),
    ("/ui/environments/<env_id>/delete", "delete_env", ("POST",)),
    ("/ui/environments/<env_id>/applications/<app_id>/remove", "remove_app", ("POST",)),
    ("/ui/environments/<env_id>/actions/<action_id>", "action", ("GET", "POST")),
    ("/ui/environments/<env_id>/add/<package_id>", "wizard",
     ("GET", "POST")),
    ("/ui/environments/<env_id>/deployments/<task_id>", "deployment", ("GET",)),
]


class WebUi:
    """The pages; ``api`` is the :class:`murano_engine.api.app.Api` they belong to."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.url_map = Map([Rule(path, endpoint=endpoint, methods=methods)
                            for path, endpoint, methods in RULES], strict_slashes=False)
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("murano_engine.web", "templates"),
            autoescape=True, undefined=jinja2.StrictUndefined)
        self.templates.filters["service_name"] = _service_name
        self.templates.filters["classname"] = lambda t: str(t or "").split("/", 1)[0]
        self.templates.filters["status"] = words.status
        self.templates.filters["state"] = words.state
        self.templates.filters["when"] = words.when
        self.templates.filters["report_time"] = words.report_time
        self.templates.filters["returned"] = words.returned
        self.templates.filters["dotted"] = words.dotted
        self.templates.globals["csrf_field"] = guard.csrf_field
        self.guard = guard.Guard(api.settings.secure_cookies, [picture.STYLE])
        settings = api.settings
        self.forms = FormPool(settings.ui_form_workers, settings.ui_form_workers_per_project,
                              FormLimits(settings.form_time_limit, settings.form_step_limit,
                                         settings.form_memory_limit))
        self._cloud: Callable[[], dynamic_ui.Choices] | None = None

    def parameters_source(self, ctx: Context, package: dict[str, Any]
                          ) -> Callable[[str, str], Any]:
        """Calls a UI's ``ParametersSource``: a public static method of the package, run
        by the engine as ``POST /v1/actions`` runs it."""
        def call(class_name: str, method: str) -> Any:
            return self.api.dispatcher.call_static(ctx, {
                "className": class_name, "methodName": method, "parameters": {},
                "packageName": package["fully_qualified_name"]})
        return call

    @staticmethod
    def ui_problems(text: bytes, filename: str) -> list[str]:
        """The problems of a package's UI definition (``text``, shown as ``filename``)."""
        return dynamic_ui.problems(text, filename)

    def ui_model(self, ctx: Context, package: dict[str, Any], ui_definition: bytes,
                 answers: Any, name: str) -> Any:
        """The object model ``ui_definition`` (a package's ui.yaml) makes of ``answers``
        (``POST /v1/catalog/packages/<id>/ui/model``), evaluated in the form pool."""
        choices = self.cloud_choices()
        try:
            ui = self._parse(ctx, package, ui_definition, name)
            return self.forms.run(ctx.project_id, lambda: dynamic_ui.evaluate_application(
                ui, dynamic_ui.clean_all(ui, answers, choices)))
        except dynamic_ui.UiError as exc:
            raise BadRequest(exc.message, problems=exc.problems) from None

    def _parse(self, ctx: Context, package: dict[str, Any], ui_definition: bytes,
               name: str) -> dynamic_ui.UiDefinition:
        """The package's ui.yaml read in the form pool, with what its
        ``ParametersSource`` method returns (MuranoPL, run between, under the engine's
        own budget)."""
        ui = self.forms.run(ctx.project_id, lambda: dynamic_ui.parse(
            ui_definition, f"{package['fully_qualified_name']}/UI/ui.yaml", name))
        if ui.parameters_source is not None:
            dynamic_ui.add_parameters(ui, self.parameters_source(ctx, package)(
                *ui.parameters_source))
        return ui

    def cloud_choices(self) -> dynamic_ui.Choices:
        """A fresh choices function of the configured cloud (for one request)."""
        if self._cloud is None:
            from murano_engine.backend.settings import SCHEMA
            from murano_engine.engine.config import load_config
            config = load_config(self.api.settings.config_file, schema=SCHEMA)
            self._cloud = for_cloud({"heat": dict(config["heat"])})
        return self._cloud()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        return self.respond(Request(environ))(environ, start_response)

    def respond(self, request: Request) -> Response:
        """The page for ``request`` (errors of the API become an error page); a
        state-changing request :mod:`~murano_engine.web.guard` refuses gets a 403."""
        refusal = self.guard.begin(request)
        if refusal is not None:
            response = self.error_page(request, None, 403, refusal)
        else:
            response = self._dispatch(request)
        return self.guard.finish(request, response)

    def _dispatch(self, request: Request) -> Response:
        ctx = None
        try:
            if any(NUL in k or NUL in v for k, v in request.form.items(multi=True)):
                raise BadRequest("a form field has a NUL character; no text here can hold one")
            endpoint, args = self.url_map.bind_to_environ(request.environ).match()
            if endpoint == "static":
                response = self.on_static(request, **args)
            elif endpoint == "login":
                response = self.on_login(request)
            else:
                ctx = self.identify(request)
                response = redirect("/ui/login") if ctx is None else \
                    getattr(self, "on_" + endpoint)(request, ctx, **args)
        except ApiError as exc:
            response = self.error_page(request, ctx, exc.status,
                                       self.api.hide_paths(exc.message),
                                       [self.api.hide_paths(p) for p in exc.problems or []])
        except HTTPException as exc:
            response = self.error_page(request, ctx, exc.code or 500,
                                       exc.description or exc.name)
        return response

    def error_page(self, request: Request, ctx: Context | None, code: int, message: str,
                   problems: list[str] | None = None) -> Response:
        """An error in the pages' frame, with a way back: the page the user came from
        (when it is one of these pages), else the catalog."""
        came_from = request.referrer or ""
        origin = request.host_url.rstrip("/")
        back = came_from[len(origin):] if came_from.startswith(origin + "/ui") else "/ui/"
        if back == request.full_path.rstrip("?"):
            back = "/ui/"
        return self.page("error.html", ctx, status=code, code=code, message=message,
                         problems=problems or [], back=back)

    def on_static(self, request: Request, name: str) -> Response:
        resource = STATIC / name
        media_type = STATIC_TYPES.get("." + name.rpartition(".")[2])
        if media_type is None or "/" in name or not resource.is_file():
            raise NotFound()
        return Response(resource.read_bytes(), mimetype=media_type)

    def identify(self, request: Request) -> Context | None:
        token = request.cookies.get(COOKIE)
        if not token:
            return None
        try:
            return self.api.identify({**request.environ, "HTTP_X_AUTH_TOKEN": token})
        except ApiError:
            return None

    def page(self, name: str, ctx: Context | None, status: int = 200, **values: Any
             ) -> Response:
        body = self.templates.get_template(name).render(user=ctx, **values)
        return Response(body, status=status, mimetype="text/html")

    def set_cookie(self, request: Request, response: Response, name: str, value: str
                   ) -> None:
        """A cookie of the pages: HTTP only, same-site, ``Secure`` where configured."""
        response.set_cookie(name, value, httponly=True, samesite="Strict",
                            secure=self.guard.secure(request))

    # -- login -------------------------------------------------------------------------
    def on_login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.page("login.html", None, error=None)
        token = request.form.get("token", "").strip()
        if not token:
            return self.page("login.html", None, status=401, error="Enter a token.")
        if self.api.settings.auth_strategy != "keystone":  # keystone checks the next page
            try:
                self.api.identify({**request.environ, "HTTP_X_AUTH_TOKEN": token})
            except ApiError as exc:
                return self.page("login.html", None, status=401, error=exc.message)
        response = redirect("/ui/")
        self.set_cookie(request, response, COOKIE, token)
        return response

    def on_logout(self, request: Request, ctx: Context) -> Response:
        response = redirect("/ui/login")
        response.delete_cookie(COOKIE)
        return response

    # -- catalog -------------------------------------------------------------------------
    def on_catalog(self, request: Request, ctx: Context, message: str | None = None,
                   problems: list[str] | None = None, status: int = 200) -> Response:
        query = request.args.get("q", "").strip()
        params = {"search": [query]} if query else {}
        packages = catalog.list_packages(self.api.store, self.api.settings, ctx,
                                         params)["packages"]
        return self.page("catalog.html", ctx, status=status, packages=packages, query=query,
                         message=message, problems=problems or [])

    def on_upload(self, request: Request, ctx: Context) -> Response:
        upload = request.files.get("package")
        if upload is None or not upload.filename:
            return self.on_catalog(request, ctx, "Choose a package file (.zip) first.",
                                   status=400)
        data = upload.read(self.api.settings.package_size_limit + 1)
        try:
            created = catalog.create_package(self.api.store, self.api.settings,
                                             self.api.interpreter, ctx, data, {},
                                             self.ui_problems)
        except ApiError as exc:
            hide = self.api.hide_paths
            return self.on_catalog(request, ctx, f"The upload failed: {hide(exc.message)}",
                                   [hide(p) for p in exc.problems or []], status=exc.status)
        return redirect(f"/ui/packages/{created['id']}")

    def on_package(self, request: Request, ctx: Context, package_id: str) -> Response:
        package = catalog.show_package(self.api.store, ctx, package_id)
        chosen = request.args.get("env")
        if chosen:  # its "add to environment" form: to that environment's wizard
            return redirect(f"/ui/environments/{url_quote(chosen, safe='')}/add/{package_id}")
        manifest = self._manifest(ctx, package_id)
        versions = [p for p in catalog.list_packages(
            self.api.store, self.api.settings, ctx,
            {"fqn": [package["fully_qualified_name"]]})["packages"]]
        envs = environments.list_envs(self.api.store, ctx, {})["environments"]
        requires = manifest.get("Require") or {}
        return self.page("package.html", ctx, package=package, versions=versions,
                         requires=requires if isinstance(requires, dict) else {},
                         environments=envs, can_delete=ctx.is_admin
                         or package["owner_id"] == ctx.project_id)

    def _manifest(self, ctx: Context, package_id: str) -> dict:
        archive = catalog.package_blob(self.api.store, ctx, package_id, "archive")
        try:
            with zipfile.ZipFile(io.BytesIO(archive)) as source:
                loaded = yaml.safe_load(source.read("manifest.yaml"))
        except (KeyError, zipfile.BadZipFile, yaml.YAMLError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def on_logo(self, request: Request, ctx: Context, package_id: str) -> Response:
        try:
            data = catalog.package_blob(self.api.store, ctx, package_id, "logo")
        except ApiError:
            data = b""
        media_type = image_type(data)
        if media_type is None:  # none, or not an image: a letter on a tile instead
            name = catalog.show_package(self.api.store, ctx, package_id)["name"]
            svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">'
                   '<rect width="64" height="64" rx="10" fill="#5b7db1"/><text x="32" y="43" '
                   'font-size="32" text-anchor="middle" fill="white" font-family="sans-serif">'
                   f'{html.escape((name[:1] or "?").upper())}</text></svg>')
            return Response(svg, mimetype="image/svg+xml")
        return Response(data, mimetype=media_type)

    def on_delete_package(self, request: Request, ctx: Context, package_id: str) -> Response:
        catalog.delete_package(self.api.store, ctx, package_id)
        return redirect("/ui/")

    # -- environments --------------------------------------------------------------------
    def on_environments(self, request: Request, ctx: Context) -> Response:
        error = None
        if request.method == "POST":
            name = request.form.get("name", "").strip()
            if not name:
                error = "Give the environment a name."
            else:
                try:
                    env = environments.create_env(self.api.store, ctx, {"name": name},
                                                  self.api.settings.environment_class)
                    return redirect(f"/ui/environments/{env.id}")
                except ApiError as exc:
                    error = exc.message
        envs = environments.list_envs(self.api.store, ctx, {})["environments"]
        for env in envs:  # as its page says: an open session that changes nothing is none
            if env["status"] == "pending":
                env["status"] = environments.pending_changes(self.api.store, ctx,
                                                             env["id"])["status"]
        return self.page("environments.html", ctx, environments=envs, error=error,
                         status=400 if error else 200)

    def _pending(self, request: Request, ctx: Context, env_id: str) -> Pending:
        """The user's changes of ``env_id`` not deployed yet, made in whichever browser:
        the session this browser last changed (its cookie) while it holds changes, else
        the user's newest session that does, else this browser's unchanged one."""
        found = environments.pending_changes(self.api.store, ctx, env_id)
        mine: list[str] = found["mine"]
        cookie = request.cookies.get(SESSION_COOKIE + env_id)
        if cookie in mine:
            session_id: str | None = cookie
        elif mine:
            session_id = mine[0]
        else:
            session_id = self._open_session(ctx, env_id, cookie)
        return Pending(session_id, session_id in mine, found["others"], found["status"])

    def _open_session(self, ctx: Context, env_id: str, session_id: str | None) -> str | None:
        """``session_id`` when it is an open session of the user's, else None."""
        if not session_id:
            return None
        try:
            found = environments.show_session(self.api.store, ctx, env_id, session_id)
        except ApiError:
            return None
        return session_id if found.get("state") == "opened" else None

    def _session_id(self, request: Request, ctx: Context, env_id: str) -> str | None:
        """The session the user's changes of ``env_id`` go into (see :meth:`_pending`)."""
        return self._pending(request, ctx, env_id).session_id

    def _state(self, ctx: Context, env_id: str, pending: Pending | None) -> dict[str, Any]:
        """What the environment page and its live updates show. While a deployment runs
        the applications and the model are the ones it deploys (the environment's own
        change only when it ends). ``pending`` (the page's) adds the user's changes; an
        open session that changes nothing does not make the environment "pending"."""
        env = environments.show_env(self.api.store, ctx, env_id, None)
        if env["status"] == "pending":
            env["status"] = pending.status if pending else environments.pending_changes(
                self.api.store, ctx, env_id)["status"]
        running = env["acquired_by"] if env["status"] in environments.BUSY else None
        model = environments.get_model(self.api.store, ctx, env_id, "", running)
        if model is None:  # being deleted: what is being destroyed
            model = environments.get_model(self.api.store, ctx, env_id, "", None)
        shown = model.get("services") if isinstance(model, dict) else None
        pending_services = environments.show_env(
            self.api.store, ctx, env_id, pending.session_id)["services"] \
            if pending and pending.changed else None
        deployments = environments.list_deployments(self.api.store, ctx, env_id)["deployments"]
        latest = deployments[-1] if deployments else None
        reports, steps = [], []
        if latest:
            reports = environments.reports(self.api.store, ctx, env_id, latest["id"],
                                           [])["reports"]
            steps = environments.steps(self.api.store, ctx, env_id, latest["id"])
        return {"env": env, "model": model, "applications": list(shown or []),
                "pending": pending_services, "deployments": deployments, "latest": latest,
                "reports": reports, "steps": steps,
                "failure": _failure(latest, reports, self.api.hide_paths)}

    def _picture(self, state: dict[str, Any]) -> str:
        return (picture.timeline_svg(state["steps"], time.time()) + picture.topology_svg(
            state["model"], picture.lanes(state["steps"])))

    def _details(self, ctx: Context, applications: list[dict[str, Any]]
                 ) -> dict[str, dict[str, Any]]:
        """Each deployed application's actions, outputs, servers and the commands that
        reach them, by object id."""
        details = {}
        for app in applications:
            header = app.get("?") or {}
            try:
                names = outputs.out_properties(actions.class_of(self.api, ctx,
                                                                str(header.get("type"))))
            except ApiError:  # its package left the catalog: no outputs to tell
                names = set()
            values = outputs.output_values(app, names)
            held = outputs.servers(app)
            details[str(header.get("id"))] = {
                "actions": actions.actions_of(app), "outputs": values, "servers": held,
                "reach": outputs.reach_commands(values, held)}
        return details

    def on_environment(self, request: Request, ctx: Context, env_id: str) -> Response:
        pending = self._pending(request, ctx, env_id)
        state = self._state(ctx, env_id, pending)
        packages = catalog.list_packages(self.api.store, self.api.settings, ctx,
                                         {"type": ["Application"]})["packages"]
        busy = state["env"]["status"] in environments.BUSY
        deployed = [] if busy else state["applications"]
        return self.page("environment.html", ctx, packages=packages,
                         picture=self._picture(state), legend=picture.legend(),
                         details=self._details(ctx, deployed), others=pending.others,
                         can_deploy=not busy and (pending.changed or bool(deployed)),
                         **state)

    def on_live(self, request: Request, ctx: Context, env_id: str) -> Response:
        try:
            state = self._state(ctx, env_id, None)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = {"gone": True}  # its deletion ended
            return Response(json.dumps(body), mimetype="application/json")
        latest = state["latest"]
        body = {"status": words.status(state["env"]["status"]),
                "deployment": latest and {"id": latest["id"],
                                          "state": words.state(latest["state"]),
                                          "finished": latest["finished"]},
                "applications": self.templates.get_template("applications.html").render(
                    applications=state["applications"], env=state["env"], pending=None,
                    details={}),
                "reports": self.templates.get_template("reports.html").render(
                    reports=state["reports"]),
                "failure": self.templates.get_template("failure.html").render(
                    failure=state["failure"]) if state["failure"] else None,
                "picture": self._picture(state)}
        return Response(json.dumps(body), mimetype="application/json")

    def on_deploy(self, request: Request, ctx: Context, env_id: str) -> Response:
        """Deploy the user's changes (from whichever browser), else deploy the deployed
        applications again; refused (409) when there is neither: nothing to deploy."""
        pending = self._pending(request, ctx, env_id)
        env = environments.show_env(self.api.store, ctx, env_id, None)
        if env["status"] not in environments.BUSY:  # else a second click: the first deploys
            session_id = pending.session_id
            if not pending.changed and not env["services"]:
                raise Conflict(f"there is nothing to deploy in {env['name']}: it has no "
                               f"application; add one first")
            if session_id is None:
                session_id = environments.configure(self.api.store, ctx, env_id)["id"]
            self.api.submit(environments.deploy(self.api.store, ctx, env_id, session_id))
        response = redirect(f"/ui/environments/{env_id}")
        response.delete_cookie(SESSION_COOKIE + env_id)
        return response

    def on_preview(self, request: Request, ctx: Context, env_id: str) -> Response:
        """What Deploy would do now (the user's changes, else the deployed applications
        again), as a plan an engine worker makes: nothing is made, changed or sent."""
        from murano_engine.api.previews import preview_task
        from murano_engine.web import plan_picture
        pending = self._pending(request, ctx, env_id)
        env = environments.show_env(self.api.store, ctx, env_id, None)
        task = preview_task(self.api.store, ctx, env_id,
                            pending.session_id if pending.changed else None)
        plan = self.api.hidden(self.api.dispatcher.preview(ctx, task))
        return self.page("preview.html", ctx, env=env, plan=plan,
                         heading=plan_picture.title(plan), shown=plan_picture.fragment(plan),
                         can_deploy=env["status"] not in environments.BUSY)

    def on_discard(self, request: Request, ctx: Context, env_id: str) -> Response:
        """Drop the user's changes not deployed yet (the session they are in)."""
        pending = self._pending(request, ctx, env_id)
        if pending.changed and pending.session_id:
            environments.delete_session(self.api.store, ctx, env_id, pending.session_id)
        response = redirect(f"/ui/environments/{env_id}")
        response.delete_cookie(SESSION_COOKIE + env_id)
        return response

    def on_delete_env(self, request: Request, ctx: Context, env_id: str) -> Response:
        """Delete the environment through the engine (it destroys what it deployed), or
        abandon it: forget it without touching its servers."""
        abandon = bool(request.form.get("abandon"))
        self.api.submit(environments.delete_env(self.api.store, ctx, env_id, abandon))
        try:
            environments.show_env(self.api.store, ctx, env_id, None)
        except ApiError:  # gone at once (abandoned, or never deployed)
            return redirect("/ui/environments")
        response = redirect(f"/ui/environments/{env_id}")
        response.delete_cookie(SESSION_COOKIE + env_id)
        return response

    def on_remove_app(self, request: Request, ctx: Context, env_id: str,
                      app_id: str) -> Response:
        """Take an application out of the user's changes; a deployed one is then
        removed from the cloud at once (a deployment of the changes)."""
        session_id = self._session_id(request, ctx, env_id) or environments.configure(
            self.api.store, ctx, env_id)["id"]
        environments.edit_services(self.api.store, ctx, env_id, session_id, "DELETE",
                                   f"/{app_id}")
        deployed = environments.show_env(self.api.store, ctx, env_id, None)["services"]
        response = redirect(f"/ui/environments/{env_id}")
        if any(str((s.get("?") or {}).get("id")) == app_id for s in deployed
               if isinstance(s, dict)):
            self.api.submit(environments.deploy(self.api.store, ctx, env_id, session_id))
            response.delete_cookie(SESSION_COOKIE + env_id)
        elif session_id not in environments.pending_changes(self.api.store, ctx,
                                                            env_id)["mine"]:
            # it changes nothing any more: no change waits (nor says so in the status)
            environments.delete_session(self.api.store, ctx, env_id, session_id)
            response.delete_cookie(SESSION_COOKIE + env_id)
        else:
            self.set_cookie(request, response, SESSION_COOKIE + env_id, session_id)
        return response

    def on_action(self, request: Request, ctx: Context, env_id: str,
                  action_id: str) -> Response:
        """An action's form (its arguments from the method's contracts); posted, the
        action runs on the deployed model."""
        env = environments.show_env(self.api.store, ctx, env_id, None)
        model = environments.get_model(self.api.store, ctx, env_id, "", None)
        action = actions.find_action(model, action_id)
        schema = actions.arguments_schema(self.api, ctx, action)
        posted, errors = None, {}
        if request.method == "POST":
            posted = {k: v for k, v in request.form.items() if not k.startswith("_")}
            args, errors = actions.parse_arguments(schema, posted)
            if not errors:
                task = environments.call_action(self.api.store, ctx, env_id, action_id, args)
                self.api.submit(task)
                return redirect(f"/ui/environments/{env_id}")
        owner = next((o for o in actions.objects(model) if str(o["?"].get("id")) ==
                      action.object_id), {})
        return self.page("action.html", ctx, status=400 if errors else 200, env=env,
                         action=action, owner=owner,
                         fields=actions.argument_fields(schema, posted, errors))

    def on_deployment(self, request: Request, ctx: Context, env_id: str,
                      task_id: str) -> Response:
        env = environments.show_env(self.api.store, ctx, env_id, None)
        reports = environments.reports(self.api.store, ctx, env_id, task_id, [])["reports"]
        steps = environments.steps(self.api.store, ctx, env_id, task_id)
        objects = environments.get_model(self.api.store, ctx, env_id, "", None)
        deployment = next((d for d in environments.list_deployments(
            self.api.store, ctx, env_id)["deployments"] if d["id"] == task_id), None)
        if deployment is None:
            raise NotFound()
        body = picture.document(f"Deployment of {env['name']}", steps, [
            {**r, "timestamp": _float(r["timestamp"])} for r in reports], objects,
            _failure(deployment, reports, self.api.hide_paths))
        return Response(body, mimetype="text/html")

    # -- the wizard ----------------------------------------------------------------------
    def on_wizard(self, request: Request, ctx: Context, env_id: str,
                  package_id: str) -> Response:
        """A page of the wizard: its forms are evaluated in the API's form pool, within
        a form budget (the ``ParametersSource`` method runs between, under its own)."""
        env = environments.show_env(self.api.store, ctx, env_id, None)
        package = catalog.show_package(self.api.store, ctx, package_id)
        text = catalog.package_blob(self.api.store, ctx, package_id, "ui_definition")
        try:
            ui = self._parse(ctx, package, text, package["name"])
        except dynamic_ui.UiError as exc:
            raise ApiError(exc.message, status=400, problems=exc.problems) from None
        return self.forms.run(ctx.project_id, lambda: self._wizard_page(
            request, ctx, env, package, ui))

    def _wizard_page(self, request: Request, ctx: Context, env: dict[str, Any],
                     package: dict[str, Any], ui: dynamic_ui.UiDefinition) -> Response:
        env_id = env["id"]
        step, answers = 0, {}
        errors: dict[str, str] = {}
        choices = self._choices_in(ctx, env_id, self._session_id(request, ctx, env_id))
        if request.method == "POST":
            try:
                answers = json.loads(request.form.get("_answers") or "{}")
                step = int(request.form.get("_step") or 0)
            except ValueError:
                raise ApiError("the wizard's state is damaged; start again", status=400) \
                    from None
            if not _wizard_answers(answers) or not 0 <= step < len(ui.forms):
                raise ApiError("the wizard's state is damaged; start again", status=400)
            form = ui.forms[step]
            answers[form.name] = {k: v for k, v in request.form.items()
                                  if not k.startswith("_") and k != guard.CSRF_FIELD}
            for spec in form.fields:  # an unchecked box posts nothing
                if spec.type in ("boolean", "floatingip") and spec.name not in answers[
                        form.name]:
                    answers[form.name][spec.name] = ""
            if request.form.get("_back") and step > 0:  # answers kept, checked on return
                step -= 1
            else:
                data, errors = self._clean_until(ui, answers, step, choices)
                if not errors:
                    if step == len(ui.forms) - 1:
                        return self._add(request, ctx, env_id, ui, data)
                    step += 1
        data, _ = self._clean_until(ui, answers, step - 1, choices) if step else ({}, {})
        form = ui.forms[step]
        given = answers.get(form.name)
        fields = [self._control(ui, spec, data, given, errors, choices)
                  for spec in form.fields]
        return self.page("wizard.html", ctx, status=400 if errors else 200, env=env,
                         package=package, ui=ui, step=step, form=form, fields=fields,
                         titles=[_step_title(f) for f in ui.forms],
                         form_error=errors.get(""), answers=json.dumps(
                             {k: v for k, v in answers.items()
                              if k in [f.name for f in ui.forms]}))

    def _choices_in(self, ctx: Context, env_id: str, session_id: str | None
                    ) -> dynamic_ui.Choices:
        """Cloud fields list the cloud's choices; a field naming a class lists the
        environment's applications of that class."""
        services = environments.show_env(self.api.store, ctx, env_id, session_id)["services"]
        cloud = self.cloud_choices()

        def choices(spec: dynamic_ui.Field) -> list[tuple[str, str]] | None:
            if not spec.is_application:
                return cloud(spec)
            return [("", "(none)")] + [
                (str(s["?"].get("id")), _service_name(s)) for s in services
                if isinstance(s, dict) and str(s["?"].get("type", "")).split("/")[0]
                == spec.type]
        return choices

    def _clean_until(self, ui: dynamic_ui.UiDefinition, answers: dict, last: int,
                     choices: dynamic_ui.Choices) -> tuple[dict[str, Any], dict[str, str]]:
        data: dict[str, Any] = {}
        for form in ui.forms[:last + 1]:
            values, errors = dynamic_ui.clean_form(
                ui, form, dynamic_ui.browser_answers(answers.get(form.name) or {}), data,
                choices)
            if errors:
                return data, errors
            data[form.name] = values
        return data, {}

    def _control(self, ui: dynamic_ui.UiDefinition, spec: dynamic_ui.Field, data: dict,
                 given: dict | None, errors: dict[str, str], choices: dynamic_ui.Choices
                 ) -> dict[str, Any]:
        current = {**data}

        def attr(value: Any) -> Any:
            try:
                return dynamic_ui.attribute(ui, value, current)
            except dynamic_ui.UiError as exc:
                return f"({exc.message})"

        value = given[spec.name] if given and spec.name in given else attr(spec.initial)
        options = None
        if spec.type == "choice":
            options = attr(spec.choices) or []
        else:
            options = choices(spec)
        return {"spec": spec, "value": "" if value is None else value, "options": options,
                "label": attr(spec.label), "description": attr(spec.description),
                "help": attr(spec.help_text), "hidden": bool(attr(spec.hidden)),
                "required": bool(attr(spec.required)), "error": errors.get(spec.name),
                "confirm": given.get(dynamic_ui.confirmation_name(spec), "")
                if given else value}

    def _add(self, request: Request, ctx: Context, env_id: str,
             ui: dynamic_ui.UiDefinition, data: dict) -> Response:
        try:
            model = dynamic_ui.evaluate_application(ui, data)
        except dynamic_ui.UiError as exc:
            raise ApiError(exc.message, status=400, problems=exc.problems) from None
        session_id = self._session_id(request, ctx, env_id) or environments.configure(
            self.api.store, ctx, env_id)["id"]
        environments.edit_services(self.api.store, ctx, env_id, session_id, "POST", "",
                                   model)
        response = redirect(f"/ui/environments/{env_id}")
        self.set_cookie(request, response, SESSION_COOKIE + env_id, session_id)
        return response


@dataclasses.dataclass(frozen=True)
class Pending:
    """A user's changes of an environment not deployed yet, as the pages see them."""

    #: the session the user's changes go into (None: none is open; one is made)
    session_id: str | None
    #: whether that session changes the environment's model
    changed: bool
    #: how many other users' open sessions change it
    others: int
    #: the environment's status, counting no open session that changes nothing
    status: str


def token_from_cookie(protected: Callable, web: WebUi) -> Callable:
    """In front of keystonemiddleware: the login page goes straight to the pages, other
    pages carry their cookie's token as ``X-Auth-Token`` (no cookie: to the login)."""
    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or ""
        if path.rstrip("/") == "/ui/login" or path.startswith("/ui/static/"):
            return web(environ, start_response)
        if (path == "/ui" or path.startswith("/ui/")) and not environ.get("HTTP_X_AUTH_TOKEN"):
            token = Request(environ).cookies.get(COOKIE)
            if not token:
                refused = redirect("/ui/login")
                guard.protect(refused.headers, guard.content_security_policy())
                return refused(environ, start_response)
            environ = {**environ, "HTTP_X_AUTH_TOKEN": token}
        return protected(environ, start_response)
    return app


def _service_name(service: dict[str, Any]) -> str:
    """How an application is shown: its name in the UI, else its object name, its name
    property or its class."""
    header = service.get("?") or {}
    return str((header.get(dynamic_ui.DASHBOARD_KEY) or {}).get("name") or
               header.get("name") or service.get("name") or
               str(header.get("type")).split("/", 1)[0])


def _step_title(form: dynamic_ui.Form) -> str:
    """A wizard step's title: the first ``descriptionTitle`` of its fields, else its name
    in words (``appConfiguration``: "App configuration")."""
    for spec in form.fields:
        if isinstance(spec.description_title, str) and spec.description_title.strip():
            return spec.description_title.strip()
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", form.name).replace("_", " ").strip()
    return spaced[:1].upper() + spaced[1:].lower()


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _failure(deployment: dict[str, Any] | None, reports: list[dict[str, Any]],
             hide: Callable[[str], str]) -> dict[str, Any] | None:
    """The MuranoPL error of a failed deployment: ``{message, kind, stack}`` (the stack
    from the result, else from the error report that carried it), the server's own
    folders hidden (``hide``)."""
    result = (deployment or {}).get("result") or {}
    if not result.get("isException"):
        return None
    error = result.get("result") or {}
    message = str(error.get("message") or "the deployment failed")
    stack = error.get("traceback") or error.get("details") or next(
        (r["details"] for r in reversed(reports) if r.get("level") == "error"
         and r.get("details") and str(r.get("text")) == message), None)
    names = error.get("names") or []
    return {"message": hide(message), "kind": str(names[0]) if names else "",
            "stack": hide(str(stack or ""))}


def _wizard_answers(answers: Any) -> bool:
    """Whether the wizard's posted state is what its pages write: each form's answers
    a mapping of field names to texts (or lists of texts)."""
    return isinstance(answers, dict) and all(
        isinstance(form, dict) and all(
            isinstance(name, str) and (isinstance(value, str) or isinstance(value, list)
                                       and all(isinstance(v, str) for v in value))
            for name, value in form.items())
        for form in answers.values())
