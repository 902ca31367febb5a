"""Container images of the msprobe tools, built and run through the docker SDK (``msprobe image``, ``msprobe run``)."""
