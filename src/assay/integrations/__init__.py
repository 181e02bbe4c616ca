"""Trainer adapters over Assay's HTTP surface (issue 25): each module speaks one trainer's own interface
and imports that trainer only when used. `verl_tools`: verl `BaseTool` subclasses over Assay sessions."""
