"""The API's generator and schema tools: the XRDs written from the kinds' models
(``xrds``), the pinned upstream CRDs (``crds``) and the built-in kinds' schemas
(``coreschemas``), validation against them with the Crossplane CLI (``validate``),
and the API server's own CRD validation (``xrdcheck``, in Go)."""
