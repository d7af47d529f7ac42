"""Agent Skills for code mode (issue 37): skills from local directories, listed to the model and
read, and their Python files run in the sandbox by ``load_skill``."""
