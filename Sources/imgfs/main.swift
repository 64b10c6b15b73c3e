print("imgfs")
