"""The user-facing API: ``sk.*`` functions and ``Tensor`` methods, each a ``public_api`` callable
(interceptable by ``__tensor_function__``) written with ``sk.ops``."""
