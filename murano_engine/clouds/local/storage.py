"""Cinder resource types: a volume is a folder; attaching links it into the server's sandbox."""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from murano_engine.clouds.local.flavors import check_image
from murano_engine.clouds.local.resource import (
    Context,
    ResourceFailure,
    ResourceRecord,
    ResourceType,
)

VOLUME = "OS::Cinder::Volume"
ATTACHMENT = "OS::Cinder::VolumeAttachment"
_SERVER = "OS::Nova::Server"


def _attachments(ctx: Context, volume_id: str) -> list[ResourceRecord]:
    return [a for a in ctx.services.records(ATTACHMENT) if a.data["volume_id"] == volume_id]


class Volume(ResourceType):
    name = VOLUME
    properties = frozenset(
        {
            "size",
            "name",
            "description",
            "image",
            "volume_type",
            "availability_zone",
            "metadata",
            "source_volid",
            "snapshot_id",
            "backup_id",
            "scheduler_hints",
            "multiattach",
            "read_only",
        }
    )
    required = (("size",),)
    attributes = frozenset(
        {"size", "status", "name", "display_name", "attachments", "attachments_list",
         "bootable", "metadata"}
    )
    updatable = frozenset({"size", "name", "description", "metadata", "read_only"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        volume_id = ctx.services.new_id()
        data = self._data(ctx, props, None)
        data["image"] = check_image(props["image"]) if props.get("image") else None
        (ctx.services.volumes / volume_id).mkdir(parents=True)
        return volume_id, data

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        data = self._data(ctx, props, record)
        if data["size"] < record.data["size"]:
            raise ResourceFailure(
                f"volume size cannot shrink from {record.data['size']} to {data['size']} GB"
            )
        return {**record.data, **data}

    @staticmethod
    def _data(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> dict[str, Any]:
        try:
            size = int(props["size"])
        except (TypeError, ValueError):
            raise ResourceFailure(f"size {props['size']!r} is not a whole number of GB") from None
        if size < 1:
            raise ResourceFailure(f"size must be at least 1 GB, not {size}")
        name = props.get("name") or (record.data["name"] if record else ctx.default_name())
        return {"size": size, "name": name, "metadata": props.get("metadata") or {}}

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        if _attachments(ctx, record.id):
            raise ResourceFailure(f"volume {record.id} is still attached")
        shutil.rmtree(ctx.services.volumes / record.id, ignore_errors=True)

    def attribute(self, ctx: Context, record: ResourceRecord, name: str) -> Any:
        attached = _attachments(ctx, record.id)
        if name == "status":
            return "in-use" if attached else "available"
        if name == "attachments":
            return [
                {"server_id": a.data["server_id"], "device": a.data["mountpoint"]} for a in attached
            ]
        if name == "attachments_list":
            return [
                {"id": record.id, "attachment_id": a.id, "volume_id": record.id,
                 "server_id": a.data["server_id"], "device": a.data["mountpoint"]}
                for a in attached
            ]
        if name == "display_name":
            return record.data["name"]
        if name == "bootable":
            return bool(record.data.get("image"))
        return record.data.get(name)


class VolumeAttachment(ResourceType):
    name = ATTACHMENT
    properties = frozenset({"instance_uuid", "volume_id", "mountpoint"})
    required = (("instance_uuid",), ("volume_id",))

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        with ctx.services.lock:
            server = ctx.require(props["instance_uuid"], "server", _SERVER)
            volume = ctx.require(props["volume_id"], "volume", VOLUME)
            if _attachments(ctx, volume.id) and not volume.properties.get("multiattach"):
                raise ResourceFailure(f"volume {volume.id} is already attached")
            mountpoint = props.get("mountpoint") or ""
            link_name = PurePosixPath(mountpoint).name or volume.id
            link = ctx.services.guests.sandbox(server.id) / "volumes" / link_name
            folder = _volumes_folder(link.parent)
            try:
                os.symlink(ctx.services.volumes / volume.id, link_name, dir_fd=folder)
            except FileExistsError:
                raise ResourceFailure(
                    f"server {server.id} already has a disk at {mountpoint!r}") from None
            finally:
                os.close(folder)
        return ctx.services.new_id(), {
            "server_id": server.id,
            "volume_id": volume.id,
            "mountpoint": mountpoint,
            "link": str(link),
        }

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        try:
            folder = _volumes_folder(
                ctx.services.guests.sandbox(record.data["server_id"]) / "volumes")
        except (OSError, ResourceFailure):
            return  # the server is gone, or its guest removed the folder
        try:
            os.unlink(PurePosixPath(record.data["link"]).name, dir_fd=folder)
        except FileNotFoundError:
            pass
        finally:
            os.close(folder)


def _volumes_folder(path: Path) -> int:
    """The server's ``volumes`` folder, made if missing, opened without following a
    link: the server's folder is its guest's, and the engine (the host's root) must
    not make or remove anything where a link the guest left there points."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ResourceFailure(f"{path} is not a folder: {exc.strerror}") from None


TYPES: tuple[type[ResourceType], ...] = (Volume, VolumeAttachment)
