// placeholder until the origin lands
