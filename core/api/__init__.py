"""The faces' API: the home, its queue and its views, which the command line and the app call."""
