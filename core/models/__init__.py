"""The model seam: recorded and live models, the stub server, the tool schema, prices, recording."""
