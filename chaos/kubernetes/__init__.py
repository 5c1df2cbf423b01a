"""The chaos agent's Kubernetes mode: pods from the Kubernetes API (:mod:`.api`, :mod:`.pods`), frozen and cut
through their containers' cgroups by :class:`retrystorm.chaos.kubernetes.backend.KubernetesBackend`."""
