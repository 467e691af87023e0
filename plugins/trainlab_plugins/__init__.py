"""Built-in task plugins, registered through the trainlab.plugins entry-point group like any other."""
