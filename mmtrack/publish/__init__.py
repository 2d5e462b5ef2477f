"""Static regression pages: a plain site model rendered with Plotly, offline."""

from .builder import bench_id, build_site
from .model import SiteConfig, SiteModel, model_from_points
from .writer import WriteReport

__all__ = ["SiteConfig", "SiteModel", "WriteReport", "bench_id", "build_site", "model_from_points"]
