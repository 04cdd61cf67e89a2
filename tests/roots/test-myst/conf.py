extensions = ["myst_nb", "sphinx_ragcite"]
project = "MyST"
nb_execution_mode = "off"
exclude_patterns = ["_build"]
