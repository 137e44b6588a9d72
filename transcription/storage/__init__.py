"""The storage: names of the files handed between workers, signed links, the upload quota."""
