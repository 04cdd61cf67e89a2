"""Answer -> HTTP: the site, the answer API and the widget's back end."""
