from django import template

register = template.Library()


@register.filter
def duration_hms(seconds) -> str:
    """125 -> "2:05", 3725 -> "1:02:05": a video's length as players show it."""
    if seconds is None:
        return ""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
