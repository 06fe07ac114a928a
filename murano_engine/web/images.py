"""What kind of image a package's logo is, from its first bytes (never from its name)."""

from __future__ import annotations

#: (leading bytes, media type) of the raster formats a logo may be
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
)


def image_type(data: bytes) -> str | None:
    """The media type of the raster image ``data`` holds, or None when it is no image
    (HTML, SVG with its scripts, anything else)."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
