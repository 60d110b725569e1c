"""Tools from a config folder: TOML tool files and the runner that runs them.

Plain Python with no Home Assistant import, so it runs and is tested on its
own: `python -m custom_components.desktop_assistant.tools check DIR`.
"""

from .arguments import ArgumentError, parse_arguments
from .loader import load_folder
from .registry import ToolRegistry, ToolRun
from .runner import build_argv, find_executable, run_tool
from .spec import Param, Problem, ToolFolder, ToolSpec, camel_case

__all__ = [
    "ArgumentError",
    "Param",
    "Problem",
    "ToolFolder",
    "ToolRegistry",
    "ToolRun",
    "ToolSpec",
    "build_argv",
    "camel_case",
    "find_executable",
    "load_folder",
    "parse_arguments",
    "run_tool",
]
