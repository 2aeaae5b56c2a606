"""Codegen: KernelPlan → kernel source, host entry points, C header, manifest entries."""

from ckgen.codegen.render import manifest_kernels, render_header, render_kernel, render_launchers, summary

__all__ = ["manifest_kernels", "render_header", "render_kernel", "render_launchers", "summary"]
