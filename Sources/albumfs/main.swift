print("albumfs")
