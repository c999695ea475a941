"""The public scenario suite of `stratus bench`: YAML files (data only), documented in
README.md. A package so that the files ship with the wheel."""
