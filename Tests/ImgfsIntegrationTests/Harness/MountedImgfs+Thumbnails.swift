import ImgfsModel

extension MountedImgfs {
    /// The full path of the variant of longer side `size` of `url` (`thumb/<px>/<plain name>`).
    func thumbnail(_ size: Int, _ url: String) -> String {
        "\(mountPoint)/thumb/\(size)/\(NameCodec.encode(url))"
    }
}
